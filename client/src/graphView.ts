// Show Graph: the module's graph in a webview beside the source (torchMlirLens/graph), each
// op coloured by the selected backend's verdict. The page's script (client/graphPage/, built to
// dist/graphPage.js) draws it; this side sends it the graph and the cursor's line, reveals the
// source line of a clicked node (the IR panes then light its IR lines), and asks again after a
// save (or as you type, with diagnostics onType), as the IR panes do, and after a Verify (the
// server marks its mismatch on the nodes of the first diverging line).

import * as vscode from 'vscode';
import { resolveModule, type CommandDeps } from './commandArgs';
import type { LensClient } from './languageClient';
import { GRAPH, type GraphResponse } from './protocol';
import { setting } from './settings';

/** onnxEditor.ts's command lighting a model's node (named here: that module imports this). */
const REVEAL_NODE = 'torchMlirLens.revealOnnxNode';

const TYPING_DELAY_MS = 800;

/** What the page says: ready for data, reveal a node's lines, a backend picked. */
type FromPage =
  | { type: 'ready' }
  | { type: 'reveal'; file: string | null; line: number | null; irLines: number[] }
  | { type: 'target'; target: string };

/** One module's graph view. */
class GraphView implements vscode.Disposable {
  readonly panel: vscode.WebviewPanel;
  nodes = 0;
  revealed: { file: string; line: number } | undefined;
  error: string | undefined;
  private graph: unknown;
  private ready = false;
  private version = 0;

  constructor(readonly source: vscode.Uri, readonly module: string, private readonly views: GraphViews, column: vscode.ViewColumn) {
    const dist = vscode.Uri.joinPath(views.extensionUri, 'dist');
    this.panel = vscode.window.createWebviewPanel('torchMlirLens.graph', `${module} · graph`, { viewColumn: column, preserveFocus: true }, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [dist],
    });
    this.panel.webview.html = page(this.panel.webview, vscode.Uri.joinPath(dist, 'graphPage.js'));
    this.panel.webview.onDidReceiveMessage((m: FromPage) => this.onMessage(m));
  }

  /** Asks the server for the graph of the source's current text and sends it to the page. */
  async refresh(): Promise<void> {
    const version = ++this.version;
    try {
      const answer = await this.views.client.request<GraphResponse>(GRAPH, { uri: this.source.toString(), module: this.module });
      if (version !== this.version) return; // a newer text asked meanwhile
      this.graph = answer.graph;
      this.error = undefined;
      this.nodes = Array.isArray((answer.graph as { nodes?: unknown[] }).nodes) ? (answer.graph as { nodes: unknown[] }).nodes.length : 0;
      this.post({ type: 'graph', graph: this.graph });
    } catch (e) {
      if (version !== this.version) return;
      this.error = e instanceof Error ? e.message : String(e);
      this.post({ type: 'error', message: this.error });
    }
  }

  post(message: unknown): void {
    if (this.ready) void this.panel.webview.postMessage(message);
  }

  private async onMessage(m: FromPage): Promise<void> {
    if (m.type === 'ready') {
      this.ready = true;
      if (this.graph) this.post({ type: 'graph', graph: this.graph });
      else if (this.error) this.post({ type: 'error', message: this.error });
    } else if (m.type === 'reveal' && m.line) {
      await this.reveal(m.file, m.line);
    }
  }

  /** The node's Python line, selected in the source's editor (in the module's own file, or
   *  the file it names). */
  private async reveal(file: string | null, line: number): Promise<void> {
    if (this.source.path.endsWith('.onnx')) {
      // A model has no text to select: its node is lit in the model view (onnxEditor.ts).
      await vscode.commands.executeCommand(REVEAL_NODE, this.source.toString(), line);
      this.revealed = { file: this.source.toString(), line };
      return;
    }
    const target = file && !this.source.path.endsWith(file) && file.startsWith('/') && this.source.scheme === 'file' ? vscode.Uri.file(file) : this.source;
    const shown = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === target.toString());
    const editor = await vscode.window.showTextDocument(target, { viewColumn: shown?.viewColumn ?? vscode.ViewColumn.One, preserveFocus: false });
    const at = new vscode.Position(Math.max(0, line - 1), editor.document.lineAt(Math.max(0, line - 1)).firstNonWhitespaceCharacterIndex);
    editor.selection = new vscode.Selection(at, at);
    editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    this.revealed = { file: target.toString(), line };
  }

  dispose(): void {
    this.panel.dispose();
  }
}

/** The page: the script from dist/, allowed by its nonce; nothing else loads. */
function page(webview: vscode.Webview, script: vscode.Uri): string {
  const nonce = Array.from({ length: 4 }, () => Math.random().toString(36).slice(2)).join('');
  const csp = [`default-src 'none'`, `script-src 'nonce-${nonce}'`, `style-src ${webview.cspSource}`, `img-src data:`].join('; ');
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>graph</title></head>
<body><script nonce="${nonce}" src="${webview.asWebviewUri(script).toString()}"></script></body></html>`;
}

/** Every open graph view: one per module, following edits and the cursor. */
export class GraphViews implements vscode.Disposable {
  readonly views = new Map<string, GraphView>();
  private readonly subscriptions: vscode.Disposable[] = [];
  private readonly typing = new Map<string, NodeJS.Timeout>();

  constructor(readonly client: LensClient, readonly extensionUri: vscode.Uri) {
    this.subscriptions.push(
      vscode.workspace.onDidSaveTextDocument((doc) => this.refreshSource(doc.uri)),
      vscode.workspace.onDidChangeTextDocument((e) => this.onTyped(e.document)),
      vscode.window.onDidChangeTextEditorSelection((e) => this.onCursor(e.textEditor)),
    );
  }

  /** Opens (or shows) the graph of `module` of `source` beside it. */
  async show(source: vscode.Uri, module: string): Promise<void> {
    const key = `${source.toString()}\u0000${module}`;
    let view = this.views.get(key);
    if (view) {
      view.panel.reveal(undefined, true);
      return;
    }
    view = new GraphView(source, module, this, vscode.ViewColumn.Beside);
    this.views.set(key, view);
    view.panel.onDidDispose(() => this.views.delete(key));
    await view.refresh();
  }

  private of(uri: vscode.Uri): GraphView[] {
    return [...this.views.values()].filter((v) => v.source.toString() === uri.toString());
  }

  /** Asks again for the graphs of `uri`'s modules (after a save, or a Verify that marks them). */
  refreshSource(uri: vscode.Uri): void {
    for (const v of this.of(uri)) void v.refresh();
  }

  private onTyped(doc: vscode.TextDocument): void {
    if (!this.of(doc.uri).length || setting<string>('diagnostics', 'onSave', doc.uri) !== 'onType') return;
    const key = doc.uri.toString();
    clearTimeout(this.typing.get(key));
    this.typing.set(key, setTimeout(() => this.refreshSource(doc.uri), TYPING_DELAY_MS));
  }

  /** The cursor's line, to every view: a graph's ops may sit in other files of the user's
   *  (a helper module), and a line of none of its files unlights what was lit. */
  private onCursor(editor: vscode.TextEditor): void {
    if (editor.document.uri.scheme !== 'file') return;
    this.cursorAt(editor.document.uri.fsPath, editor.selection.active.line + 1);
  }

  /** Lights, in every view, the nodes of `line` of `file` (a model's node: its position). */
  cursorAt(file: string, line: number): void {
    for (const v of this.views.values()) v.post({ type: 'cursor', file, line });
  }

  dispose(): void {
    for (const t of this.typing.values()) clearTimeout(t);
    for (const v of this.views.values()) v.dispose();
    for (const s of this.subscriptions) s.dispose();
  }
}

let views: GraphViews | undefined;

/** `torchMlirLens.showGraph` [uri, module] (the lens), else the module picked: its graph view
 *  (the views are made on first use and go with the extension). */
export async function showGraph(context: vscode.ExtensionContext, deps: CommandDeps, uri?: unknown, module?: string): Promise<void> {
  const choice = await resolveModule(deps, uri ?? vscode.window.activeTextEditor?.document.uri, module);
  if (!choice) return;
  if (!views) {
    views = new GraphViews(deps.client, context.extensionUri);
    context.subscriptions.push(views, { dispose: () => (views = undefined) });
  }
  await views.show(vscode.Uri.parse(choice.source), choice.module);
}

/** The open graph views (the test report reads them). */
export function graphViews(): GraphViews | undefined {
  return views;
}

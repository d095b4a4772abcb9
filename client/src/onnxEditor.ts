// `.onnx` files open in a read-only custom editor: the model's graph, opsets, inputs and
// outputs, and its nodes with their values' types and a verdict per backend
// (`torchMlirLens/onnxModel`), drawn by the page script of client/onnxPage/ (built to
// dist/onnxPage.js) under a Content-Security-Policy that loads that script alone. Buttons open
// the model's Torch, Linalg, TOSA and StableHLO IR in IR panes (`torchMlirLens/lower` on the
// model, `module` from the answer); a clicked node lights its IR lines in them, the cursor in
// a pane lights the node its line came from (the node's 1-based position is its "line").
// The server publishes the rejected nodes to the file: Problems lists node N at line N while
// the view is open. The model is read again when the file changes on disk. Its Graph button
// opens the graph view of the model (graphView.ts, as for a module): a node clicked there
// lights its row here (`torchMlirLens.revealOnnxNode`), a row clicked here lights its node.

import * as path from 'node:path';
import * as vscode from 'vscode';
import { graphViews } from './graphView';
import type { IrPanes } from './irPanes';
import type { LensClient } from './languageClient';
import type { Linking } from './linking';
import { ONNX_MODEL, type OnnxModelResponse } from './protocol';

export const VIEW_TYPE = 'torchMlirLens.onnxModel';

/** What the page says: ready for data, a node picked, an IR asked for, read again. */
type FromPage = { type: 'ready' } | { type: 'select'; node: number } | { type: 'showIr'; target: string } | { type: 'showGraph' } | { type: 'refresh' };

/** The command a graph view of a model runs on a clicked node (uri, its 1-based position). */
export const REVEAL_NODE = 'torchMlirLens.revealOnnxNode';

/** One open model view. */
class OnnxView implements vscode.Disposable {
  model: OnnxModelResponse | undefined;
  error: string | undefined;
  /** The nodes lit by the cursor in a pane (the test report reads them). */
  lit: number[] = [];
  private ready = false;
  private version = 0;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    readonly uri: vscode.Uri,
    readonly panel: vscode.WebviewPanel,
    private readonly views: OnnxEditors,
  ) {
    const dist = vscode.Uri.joinPath(views.extensionUri, 'dist');
    panel.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    panel.webview.html = page(panel.webview, vscode.Uri.joinPath(dist, 'onnxPage.js'));
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.joinPath(uri, '..'), path.posix.basename(uri.path)));
    this.disposables.push(
      panel.webview.onDidReceiveMessage((m: FromPage) => this.onMessage(m)),
      watcher,
      watcher.onDidChange(() => this.changedOnDisk()),
      watcher.onDidCreate(() => this.changedOnDisk()),
      views.linking.onDidPaneCursor((at) => {
        if (at.uri !== this.uri.toString()) return;
        this.lit = at.lines.map((l) => l + 1);
        this.post({ type: 'cursor', nodes: this.lit });
      }),
    );
  }

  /** Asks the server for the model (its verdicts: a lowering at each backend) and shows it. */
  async refresh(): Promise<void> {
    const version = ++this.version;
    this.post({ type: 'loading', text: `Reading ${path.posix.basename(this.uri.path)} and lowering it to each backend…` });
    try {
      const model = await this.views.client.request<OnnxModelResponse>(ONNX_MODEL, { uri: this.uri.toString() });
      if (version !== this.version) return; // read again meanwhile
      this.model = model;
      this.error = model.error?.message ?? undefined;
      this.post({ type: 'model', model });
      for (const pane of this.views.panes.forSource(this.uri.toString())) void this.views.panes.refresh(pane.uri);
    } catch (e) {
      if (version !== this.version) return;
      this.error = e instanceof Error ? e.message : String(e);
      this.post({ type: 'error', message: this.error });
    }
  }

  private post(message: unknown): void {
    if (this.ready) void this.panel.webview.postMessage(message);
  }

  private async onMessage(m: FromPage): Promise<void> {
    if (m.type === 'ready') {
      this.ready = true;
      if (this.model) this.post({ type: 'model', model: this.model });
      else if (this.error) this.post({ type: 'error', message: this.error });
      else void this.refresh();
    } else if (m.type === 'refresh') {
      await this.refresh();
    } else if (m.type === 'select') {
      this.views.linking.showSourceLines(this.uri.toString(), [m.node - 1]);
      graphViews()?.cursorAt(this.uri.fsPath, m.node);
    } else if (m.type === 'showGraph') {
      await vscode.commands.executeCommand('torchMlirLens.showGraph', this.uri.toString(), this.model?.module || '*');
    } else if (m.type === 'showIr') {
      const module = this.model?.module || '*';
      await this.views.panes.open({ source: this.uri.toString(), module, target: m.target }, vscode.ViewColumn.Beside);
    }
  }

  /** The file changed: this view and the model's graph views read it again. */
  private changedOnDisk(): void {
    void this.refresh();
    graphViews()?.refreshSource(this.uri);
  }

  /** A node picked elsewhere (the graph view): its row lit and shown, its IR lines lit. */
  light(node: number): void {
    this.lit = [node];
    this.post({ type: 'cursor', nodes: this.lit });
    this.views.linking.showSourceLines(this.uri.toString(), [node - 1]);
    this.panel.reveal(undefined, true);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/** The page: the script from dist/, allowed by its nonce; nothing else loads. */
function page(webview: vscode.Webview, script: vscode.Uri): string {
  const nonce = Array.from({ length: 4 }, () => Math.random().toString(36).slice(2)).join('');
  const csp = [`default-src 'none'`, `script-src 'nonce-${nonce}'`, `style-src ${webview.cspSource}`, `img-src data:`].join('; ');
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>ONNX model</title></head>
<body><script nonce="${nonce}" src="${webview.asWebviewUri(script).toString()}"></script></body></html>`;
}

/** The custom editor of `.onnx` files: one view per open editor. */
export class OnnxEditors implements vscode.CustomReadonlyEditorProvider, vscode.Disposable {
  readonly views = new Set<OnnxView>();
  private readonly registration: vscode.Disposable;

  constructor(
    readonly client: LensClient,
    readonly panes: IrPanes,
    readonly linking: Linking,
    readonly extensionUri: vscode.Uri,
  ) {
    this.registration = vscode.Disposable.from(
      vscode.window.registerCustomEditorProvider(VIEW_TYPE, this, {
        webviewOptions: { retainContextWhenHidden: true },
        supportsMultipleEditorsPerDocument: false,
      }),
      vscode.commands.registerCommand(REVEAL_NODE, (uri: string, node: number) => this.light(uri, node)),
    );
  }

  /** Lights node `node` in the views of `uri`; false when none is open. */
  light(uri: string, node: number): boolean {
    const open = [...this.views].filter((v) => v.uri.toString() === uri);
    for (const v of open) v.light(node);
    return open.length > 0;
  }

  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    const view = new OnnxView(document.uri, panel, this);
    this.views.add(view);
    panel.onDidDispose(() => {
      this.views.delete(view);
      view.dispose();
      // Its nodes leave Problems with it (opening it again reads the model again).
      if (![...this.views].some((v) => v.uri.toString() === document.uri.toString())) this.client.forgetDiagnostics(document.uri);
    });
  }

  dispose(): void {
    this.registration.dispose();
    for (const v of this.views) v.dispose();
  }
}

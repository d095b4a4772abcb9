// IR panes: read-only virtual documents (`torch-mlir-lens:` URIs) filled from
// `torchMlirLens/lower`, opened beside the source, refreshed on save (or as you type).

import * as vscode from 'vscode';
import type { LensClient } from './languageClient';
import { LineMap } from './lineMap';
import { sourceKey } from './notebookCells';
import { paneText, placeholder, SCHEME, fromQuery, toUriParts, type PaneSpec } from './paneSpec';
import { LOWER, type LowerParams, type LowerResponse } from './protocol';
import { setting } from './settings';

export interface Pane {
  uri: vscode.Uri;
  spec: PaneSpec;
  text: string;
  map: LineMap;
  loading: boolean;
  response?: LowerResponse;
}

const TYPING_DELAY_MS = 800;

export class IrPanes implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly panes = new Map<string, Pane>();
  private readonly inflight = new Map<string, vscode.CancellationTokenSource>();
  private readonly changeEmitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changeEmitter.event;
  private readonly updateEmitter = new vscode.EventEmitter<Pane>();
  /** A pane's IR and map were replaced (linking redraws). */
  readonly onDidUpdatePane = this.updateEmitter.event;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly typingTimers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly client: LensClient) {
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this),
      vscode.workspace.onDidSaveTextDocument((doc) => this.refreshSource(doc.uri.toString())),
      vscode.workspace.onDidSaveNotebookDocument((nb) => this.refreshSource(nb.uri.toString())),
      vscode.workspace.onDidChangeTextDocument((e) => this.onTyped(e.document)),
      vscode.workspace.onDidOpenTextDocument((doc) => this.reconcile(doc)),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        if (doc.uri.scheme === SCHEME) this.forget(doc.uri.toString());
      }),
      client.onReady(() => this.refreshAll()),
    );
  }

  static uriOf(spec: PaneSpec): vscode.Uri {
    const { path, query } = toUriParts(spec);
    return vscode.Uri.from({ scheme: SCHEME, path, query });
  }

  get(uri: vscode.Uri | string): Pane | undefined {
    return this.panes.get(uri.toString());
  }

  all(): Pane[] {
    return [...this.panes.values()];
  }

  /** Panes showing IR of a source file. */
  forSource(source: string): Pane[] {
    return this.all().filter((p) => p.spec.source === source);
  }

  /** Panes whose IR links to a file: their source, or a library file their ops come from. */
  covering(uri: string): Pane[] {
    return this.all().filter((p) => p.spec.source === uri || p.map.hasLibraryFile(uri));
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    let pane = this.panes.get(uri.toString());
    if (!pane) {
      // Reopened from history or restored after a reload: the URI says what to lower.
      const spec = fromQuery(uri.query);
      if (!spec) return '// Torch-MLIR Lens: this pane has no source any more.\n';
      pane = this.track(uri, spec);
      void this.lower(pane);
    }
    return pane.text;
  }

  /** Opens (or focuses) a pane beside the source editor and lowers into it. */
  async open(spec: PaneSpec, viewColumn = vscode.ViewColumn.Beside): Promise<vscode.TextEditor> {
    const uri = IrPanes.uriOf(spec);
    let pane = this.panes.get(uri.toString());
    if (!pane) {
      pane = this.track(uri, spec);
      void this.lower(pane);
    }
    let doc = await vscode.workspace.openTextDocument(uri);
    if (doc.languageId !== 'mlir') {
      doc = await vscode.languages.setTextDocumentLanguage(doc, 'mlir').then(
        (d) => d,
        () => doc, // no `mlir` language registered: plain text is still readable
      );
    }
    return vscode.window.showTextDocument(doc, { viewColumn, preserveFocus: true, preview: false });
  }

  /** Lowers a pane again (Refresh command, save, typing). */
  refresh(uri: vscode.Uri | string): Promise<void> {
    const pane = this.panes.get(uri.toString());
    return pane ? this.lower(pane) : Promise.resolve();
  }

  refreshSource(source: string): void {
    for (const pane of this.forSource(source)) void this.lower(pane);
  }

  refreshAll(): void {
    for (const pane of this.panes.values()) void this.lower(pane);
  }

  private onTyped(doc: vscode.TextDocument): void {
    if (doc.uri.scheme === SCHEME || setting<string>('diagnostics', 'onSave', doc.uri) !== 'onType') return;
    const source = sourceKey(doc.uri.toString()); // a notebook cell: its notebook's panes
    if (!this.forSource(source).length) return;
    clearTimeout(this.typingTimers.get(source));
    this.typingTimers.set(
      source,
      setTimeout(() => {
        this.typingTimers.delete(source);
        this.refreshSource(source);
      }, TYPING_DELAY_MS),
    );
  }

  /**
   * A pane's document just opened: if its text is not the pane's, say the pane changed again.
   * VS Code drops a change event fired while it is still creating the document from the first
   * content (a fast lowering answers before that), and would keep the placeholder for good.
   */
  private reconcile(doc: vscode.TextDocument): void {
    if (doc.uri.scheme !== SCHEME) return;
    const pane = this.panes.get(doc.uri.toString());
    if (pane && doc.getText() !== pane.text) this.changeEmitter.fire(pane.uri);
  }

  private track(uri: vscode.Uri, spec: PaneSpec): Pane {
    const pane: Pane = { uri, spec, text: placeholder(spec, 'loading'), map: new LineMap([]), loading: true };
    this.panes.set(uri.toString(), pane);
    return pane;
  }

  private forget(key: string): void {
    this.inflight.get(key)?.cancel();
    this.inflight.delete(key);
    this.panes.delete(key);
  }

  private async lower(pane: Pane): Promise<void> {
    const key = pane.uri.toString();
    this.inflight.get(key)?.cancel(); // a newer request supersedes the older one
    const cts = new vscode.CancellationTokenSource();
    this.inflight.set(key, cts);
    const { spec } = pane;
    const params: LowerParams = { uri: spec.source, module: spec.module };
    if (spec.pipeline) params.pipeline = spec.pipeline;
    else params.target = spec.target;
    if (spec.pass !== undefined) params.printAfterAll = true;
    if (spec.blocks) params.inlineBlocks = spec.blocks === 'inline';
    if (spec.via) params.via = spec.via;
    pane.loading = true;
    try {
      const res = await this.client.request<LowerResponse | LowerResponse[]>(LOWER, params, cts.token);
      if (cts.token.isCancellationRequested) return;
      const one = Array.isArray(res) ? res[0] : res;
      this.apply(pane, one);
    } catch (e) {
      if (cts.token.isCancellationRequested) return;
      const msg = e instanceof Error ? e.message : String(e);
      this.client.log.error(`lowering ${spec.module} (${spec.target}): ${msg}`);
      pane.text = this.client.running
        ? `// Torch-MLIR Lens: lowering ${spec.module} failed: ${msg.replace(/\n/g, '\n// ')}\n`
        : placeholder(spec, 'no-server');
      pane.map = new LineMap([]);
      pane.response = undefined;
    } finally {
      if (this.inflight.get(key) === cts) this.inflight.delete(key);
      cts.dispose();
      pane.loading = false;
    }
    this.changeEmitter.fire(pane.uri);
    this.updateEmitter.fire(pane);
  }

  private apply(pane: Pane, res: LowerResponse): void {
    pane.response = res;
    if (pane.spec.pass !== undefined) {
      const pass = res.passes?.[pane.spec.pass];
      pane.text = pass ? pass.ir : `// Torch-MLIR Lens: the pipeline has no pass #${pane.spec.pass + 1} any more.\n`;
      pane.map = new LineMap([]); // IR after intermediate passes carries no line map
      return;
    }
    const { text, irOffset } = paneText(pane.spec, res);
    pane.text = text;
    pane.map = new LineMap(res.map ?? [], irOffset, res.frames ?? undefined);
  }

  dispose(): void {
    for (const cts of this.inflight.values()) cts.cancel();
    for (const t of this.typingTimers.values()) clearTimeout(t);
    for (const d of this.disposables) d.dispose();
    this.changeEmitter.dispose();
    this.updateEmitter.dispose();
  }
}

// Source ↔ IR linking: the cursor's source line lights up its IR lines in every open pane (and
// scrolls them into view); the cursor in a pane lights up the source line(s) that produced the
// op; optional colour bands; Ctrl/Cmd-click on an op goes to its source (DefinitionProvider).
// A source shown in a view of its own (an ONNX model's nodes) links the same way through
// `showSourceLines` and `onDidPaneCursor`.
// Library files count as sources too while a pane whose ops come from them is open: the
// cursor in `modeling_llama.py` lights up that line's ops, and Ctrl/Cmd-click on an op made
// there opens that file at that line.

import * as vscode from 'vscode';
import type { IrPanes, Pane } from './irPanes';
import { bandRanges, revealTarget, toRanges, type LineRange } from './lineMap';
import { sourceKey } from './notebookCells';
import { SCHEME } from './paneSpec';
import { SECTION, setting } from './settings';

// Compiler Explorer-like pastel bands; alpha keeps text readable in light and dark themes.
const BAND_COLOURS = [
  'rgba(255, 179, 71, 0.16)',
  'rgba(119, 221, 119, 0.16)',
  'rgba(111, 168, 255, 0.18)',
  'rgba(255, 105, 180, 0.14)',
  'rgba(178, 132, 255, 0.16)',
  'rgba(64, 224, 208, 0.16)',
];

/** Cursor lines in one editor (a notebook's cell, or the source file itself). */
export interface Cursor {
  uri: string;
  lines: number[];
}

function toVsRanges(ranges: LineRange[]): vscode.Range[] {
  return ranges.map((r) => new vscode.Range(r.start, 0, r.end, 0));
}

export class Linking implements vscode.Disposable, vscode.DefinitionProvider {
  private readonly irHighlight = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('editor.rangeHighlightBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.rangeHighlightForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Full,
    borderColor: new vscode.ThemeColor('editor.rangeHighlightBorder'),
    borderStyle: 'solid',
    borderWidth: '0 0 0 2px',
  });
  private readonly sourceHighlight = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('editor.rangeHighlightBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.rangeHighlightForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Full,
  });
  private readonly bands = BAND_COLOURS.map((backgroundColor) =>
    vscode.window.createTextEditorDecorationType({ isWholeLine: true, backgroundColor }),
  );
  private readonly disposables: vscode.Disposable[] = [];
  /** Last cursor per source URI (the editor's URI: a notebook's cell), to redraw panes later. */
  private readonly cursor = new Map<string, Cursor>();
  private readonly paneCursorEmitter = new vscode.EventEmitter<Cursor>();
  /**
   * The cursor in a pane: the source lines (0-based) its op came from, per source (an empty
   * list for a source the op is not from). Views that are no text editor (the ONNX model
   * view) light their rows from it.
   */
  readonly onDidPaneCursor = this.paneCursorEmitter.event;

  constructor(private readonly panes: IrPanes) {
    this.disposables.push(
      vscode.window.onDidChangeTextEditorSelection((e) => this.onSelection(e.textEditor)),
      vscode.window.onDidChangeVisibleTextEditors(() => this.redrawAll()),
      panes.onDidUpdatePane((pane) => this.redrawPane(pane)),
      vscode.languages.registerDefinitionProvider({ scheme: SCHEME }, this),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${SECTION}.colorBands`)) this.redrawAll();
      }),
    );
  }

  /** Per editor (URI) and decoration kind, the ranges last drawn: what the user sees (tests read it). */
  private readonly drawn = new Map<string, Record<string, vscode.Range[]>>();

  private paint(ed: vscode.TextEditor, type: vscode.TextEditorDecorationType, ranges: vscode.Range[]): void {
    ed.setDecorations(type, ranges);
    const kind = type === this.irHighlight ? 'irHighlight' : type === this.sourceHighlight ? 'sourceHighlight' : `band${this.bands.indexOf(type)}`;
    const key = ed.document.uri.toString();
    this.drawn.set(key, { ...this.drawn.get(key), [kind]: ranges });
  }

  /** The decorations last drawn in the editors of `uri`, by kind (irHighlight, sourceHighlight, band0…). */
  decorationsOf(uri: vscode.Uri | string): Record<string, vscode.Range[]> {
    return this.drawn.get(uri.toString()) ?? {};
  }

  private get bandsOn(): boolean {
    return setting('colorBands', false);
  }

  async toggleBands(): Promise<void> {
    await vscode.workspace.getConfiguration(SECTION).update('colorBands', !this.bandsOn, vscode.ConfigurationTarget.Global);
  }

  private onSelection(editor: vscode.TextEditor): void {
    const doc = editor.document;
    if (doc.uri.scheme === SCHEME) {
      const pane = this.panes.get(doc.uri);
      if (pane) this.fromPane(pane, editor);
      return;
    }
    const uri = doc.uri.toString();
    const source = sourceKey(uri); // a notebook cell's panes are its notebook's
    const panes = this.panes.covering(source); // a library file's too, while a pane uses it
    if (!panes.length) return;
    const lines = editor.selections.map((s) => s.active.line);
    this.cursor.set(source, { uri, lines });
    this.paint(editor, this.sourceHighlight, []); // that came from a pane's cursor: stale now
    for (const pane of panes) this.highlightPane(pane, { uri, lines }, true);
  }

  /** Cursor in a pane: light up the source lines of that op (innermost frame first). */
  private fromPane(pane: Pane, editor: vscode.TextEditor): void {
    const irLine = editor.selection.active.line;
    const byUri = new Map<string, number[]>();
    for (const s of pane.map.chainFor(irLine)) byUri.set(s.uri, [...(byUri.get(s.uri) ?? []), s.line]);
    this.paneCursorEmitter.fire({ uri: pane.spec.source, lines: byUri.get(pane.spec.source) ?? [] });
    for (const ed of vscode.window.visibleTextEditors) {
      if (ed.document.uri.scheme === SCHEME) continue;
      const lines = byUri.get(ed.document.uri.toString());
      if (!lines && !this.panes.covering(sourceKey(ed.document.uri.toString())).length) continue;
      this.paint(ed, this.sourceHighlight, toVsRanges(toRanges(lines ?? [])));
      const first = lines?.[0];
      if (first !== undefined) {
        ed.revealRange(new vscode.Range(first, 0, first, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      }
    }
  }

  /**
   * A view that is no text editor (the ONNX model view) selected `lines` (0-based) of
   * `source`: light their IR lines in its panes and scroll them into view, as a cursor would.
   */
  showSourceLines(source: string, lines: number[]): void {
    const at = { uri: source, lines };
    this.cursor.set(source, at);
    for (const pane of this.panes.covering(source)) this.highlightPane(pane, at, true);
  }

  private highlightPane(pane: Pane, at: Cursor, reveal: boolean): void {
    const irLines = at.lines.flatMap((l) => pane.map.irLinesFor(at.uri, l));
    for (const ed of this.editorsOf(pane.uri)) {
      this.paint(ed, this.irHighlight, toVsRanges(toRanges(irLines)));
      const first = revealTarget(irLines);
      if (reveal && first !== undefined) {
        ed.revealRange(new vscode.Range(first, 0, first, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      }
    }
  }

  private redrawPane(pane: Pane): void {
    const at = this.cursor.get(pane.spec.source) ?? this.sourceCursor(pane.spec.source);
    this.highlightPane(pane, at, true);
    this.drawBands(pane);
  }

  private redrawAll(): void {
    for (const pane of this.panes.all()) {
      const at = this.cursor.get(pane.spec.source) ?? this.sourceCursor(pane.spec.source);
      this.highlightPane(pane, at, false);
      this.drawBands(pane);
    }
  }

  private drawBands(pane: Pane): void {
    const n = this.bands.length;
    const irBands = this.bandsOn ? bandRanges(pane.map.bands(pane.spec.source, n).ir, n) : this.bands.map(() => []);
    for (const ed of this.editorsOf(pane.uri)) {
      this.bands.forEach((d, i) => this.paint(ed, d, toVsRanges(irBands[i])));
    }
    this.drawSourceBands(pane.spec.source);
  }

  /** A source's bands: every line any of its panes maps (colours agree across panes). */
  private drawSourceBands(source: string): void {
    const n = this.bands.length;
    const colourOf = new Map<number, number>();
    if (this.bandsOn) {
      for (const pane of this.panes.forSource(source)) {
        for (const [line, c] of pane.map.bands(source, n).source) colourOf.set(line, c);
      }
    }
    const srcBands = bandRanges(colourOf, n);
    for (const ed of vscode.window.visibleTextEditors) {
      if (ed.document.uri.toString() !== source) continue;
      this.bands.forEach((d, i) => this.paint(ed, d, toVsRanges(srcBands[i])));
    }
  }

  private sourceCursor(source: string): Cursor {
    const editors = [vscode.window.activeTextEditor, ...vscode.window.visibleTextEditors];
    const ed = editors.find((e) => e && sourceKey(e.document.uri.toString()) === source);
    return ed ? { uri: ed.document.uri.toString(), lines: ed.selections.map((s) => s.active.line) } : { uri: source, lines: [] };
  }

  private editorsOf(uri: vscode.Uri): vscode.TextEditor[] {
    const key = uri.toString();
    return vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === key);
  }

  /**
   * Ctrl/Cmd-click (or F12) on an op line of a pane: the source lines that produced it (the
   * library line, such as `modeling_llama.py:254`, for an op made in library code).
   */
  provideDefinition(doc: vscode.TextDocument, position: vscode.Position): vscode.LocationLink[] {
    const pane = this.panes.get(doc.uri);
    if (!pane) return [];
    const line = doc.lineAt(position.line);
    const origin = new vscode.Range(position.line, line.firstNonWhitespaceCharacterIndex, position.line, line.text.length);
    return pane.map.definitionTargets(position.line).map((s) => ({
      originSelectionRange: origin,
      targetUri: vscode.Uri.parse(s.uri),
      targetRange: new vscode.Range(s.line, 0, s.line, 0),
    }));
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.paneCursorEmitter.dispose();
    this.irHighlight.dispose();
    this.sourceHighlight.dispose();
    for (const d of this.bands) d.dispose();
  }
}

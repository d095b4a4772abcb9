// "Time on IREE CPU" (the lens, or Time Module on IREE CPU in the palette): the server's
// `torchMlirLens.profile` times the module compiled for IREE CPU against eager PyTorch and each
// dispatch, shared among the lines fused into it. Each line's share becomes a heat band: a bar
// in the gutter and a tint over the line, darker the nearer it comes to the heaviest line's,
// with the share after the line. The bands go when the file is edited (the lines moved) and come back with the next run.

import * as vscode from 'vscode';
import { moduleOfArg, type CommandDeps } from './commandArgs';
import { SERVER_COMMANDS, type LineCost, type ProfileArgs, type ProfileResponse } from './protocol';
import { speedText } from './verifyCommand';

/** A line whose share is at least this part of the heaviest line's takes that level's colour. */
const LEVELS = [0, 0.25, 0.5, 0.8];
const ALPHA = [0.1, 0.18, 0.28, 0.4];

function gutterBar(alpha: number): vscode.Uri {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="6" height="18"><rect width="4" height="18" fill="rgb(255,96,0)" fill-opacity="${Math.min(1, alpha * 2.4)}"/></svg>`;
  return vscode.Uri.parse(`data:image/svg+xml;utf8,${encodeURIComponent(svg)}`);
}

export class HeatBands implements vscode.Disposable {
  private readonly levels = ALPHA.map((alpha) =>
    vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: `rgba(255, 96, 0, ${alpha})`,
      overviewRulerColor: `rgba(255, 96, 0, ${Math.min(1, alpha * 2)})`,
      overviewRulerLane: vscode.OverviewRulerLane.Left,
      gutterIconPath: gutterBar(alpha),
      gutterIconSize: 'contain',
    }),
  );
  /** The last profile's costs by source URI, and its summary. */
  private readonly costs = new Map<string, { lines: LineCost[]; summary: string }>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    this.disposables.push(
      vscode.window.onDidChangeVisibleTextEditors(() => this.redraw()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length && this.costs.delete(e.document.uri.toString())) this.redraw();
      }),
    );
  }

  /** Shows a profile's bands (replacing the last ones of its files). */
  show(profile: ProfileResponse): void {
    const summary = profile.speed ? speedText(profile.speed) : '';
    const byUri = new Map<string, LineCost[]>();
    for (const c of profile.lineCosts) byUri.set(c.uri, [...(byUri.get(c.uri) ?? []), c]);
    for (const [uri, lines] of byUri) this.costs.set(uri, { lines, summary });
    this.redraw();
  }

  /** The lines banded in `uri` (0-based) with their share: what the user sees (tests read it). */
  bandsOf(uri: string): { line: number; share: number }[] {
    return (this.costs.get(uri)?.lines ?? []).map((c) => ({ line: c.line - 1, share: c.share }));
  }

  private redraw(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const entry = this.costs.get(editor.document.uri.toString());
      const perLevel: vscode.DecorationOptions[][] = this.levels.map(() => []);
      const heaviest = Math.max(...(entry?.lines ?? []).map((c) => c.share), 1e-9);
      for (const c of entry?.lines ?? []) {
        if (c.line < 1 || c.line > editor.document.lineCount) continue;
        const level = LEVELS.reduce((at, min, i) => (c.share / heaviest >= min ? i : at), 0);
        const percent = `${Math.round(c.share * 100)}%`;
        perLevel[level].push({
          range: new vscode.Range(c.line - 1, 0, c.line - 1, 0),
          hoverMessage: `${percent} of the compiled module's dispatch time on IREE CPU (${c.ms.toPrecision(2)} ms per call)${entry?.summary ? ` · ${entry.summary}` : ''}`,
          renderOptions: { after: { contentText: `  ${percent} of IREE CPU time`, color: new vscode.ThemeColor('editorCodeLens.foreground') } },
        });
      }
      this.levels.forEach((type, i) => editor.setDecorations(type, perLevel[i]));
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    for (const t of this.levels) t.dispose();
  }
}

/** Times a module on IREE CPU (its `{uri, module}` argument, else the active pane's, else
 *  picked) and shows each line's share as a heat band; the times in a notification. */
export async function profileModule(deps: CommandDeps, heat: HeatBands, arg?: unknown): Promise<void> {
  const m = await moduleOfArg(deps, arg);
  if (!m) return;
  const args: ProfileArgs = { uri: m.source, module: m.module, target: 'iree-cpu' };
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Torch-MLIR Lens: timing ${m.module} on IREE CPU against eager PyTorch…` },
    () => deps.client.executeServerCommand<ProfileResponse>(SERVER_COMMANDS.profile, [args]),
  );
  deps.client.log.info(`profile ${m.module}: ${JSON.stringify(result)}`);
  if (!result?.speed) {
    void vscode.window.showWarningMessage(`Torch-MLIR Lens: ${m.module} was not timed: ${result?.message ?? 'see the output'}`);
    return;
  }
  heat.show(result);
  const top = result.lineCosts[0];
  const heaviest = top ? `; heaviest: line ${top.line} (${Math.round(top.share * 100)}%)` : '';
  void vscode.window.showInformationMessage(`Torch-MLIR Lens: ${m.module}: ${speedText(result.speed)} per call${heaviest}.`);
}

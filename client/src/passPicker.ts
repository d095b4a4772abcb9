// "Show IR After Pass…": lower with printAfterAll and let the user pick any pass of the pipeline.

import * as vscode from 'vscode';
import type { IrPanes } from './irPanes';
import type { LensClient } from './languageClient';
import type { PaneSpec } from './paneSpec';
import { LOWER, type LowerResponse } from './protocol';

export async function pickPass(client: LensClient, panes: IrPanes, base: PaneSpec): Promise<void> {
  const res = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Torch-MLIR Lens: running ${base.module}'s pipeline pass by pass…`, cancellable: true },
    (_progress, token) =>
      client.request<LowerResponse>(
        LOWER,
        { uri: base.source, module: base.module, ...(base.pipeline ? { pipeline: base.pipeline } : { target: base.target }), printAfterAll: true },
        token,
      ),
  );
  const passes = res.passes ?? [];
  if (!passes.length) {
    void vscode.window.showInformationMessage(`Torch-MLIR Lens: the ${base.target} pipeline reported no passes for ${base.module}.`);
    return;
  }
  const items = passes.map((p, i) => ({
    label: `${i + 1}. ${p.name}`,
    description: `${p.ir.split('\n').length} lines`,
    index: i,
  }));
  const picked = await vscode.window.showQuickPick(items, {
    title: `IR of ${base.module} after a pass (${base.pipelineName ?? base.target})`,
    placeHolder: 'Pick a pass',
    matchOnDescription: true,
  });
  if (!picked) return;
  await panes.open({ ...base, pass: picked.index, passName: passes[picked.index].name });
}

// "Copy Export Code": the server writes Python that reproduces the module's IR with plain
// torch-mlir, the rewrites it lowers through inlined (code the user owns, importing nothing of
// this extension); it goes to the clipboard.

import * as vscode from 'vscode';
import { moduleOfArg, resolveTarget, type CommandDeps } from './commandArgs';
import { SERVER_COMMANDS, targetTitle, type ExportCodeArgs, type ExportCodeResponse } from './protocol';
import { setting } from './settings';

export async function copyExportCode(deps: CommandDeps, arg?: unknown): Promise<void> {
  const m = await moduleOfArg(deps, arg);
  if (!m) return;
  const t = await resolveTarget(m.target ?? setting('defaultTarget', 'linalg'));
  if (!t) return;
  const args: ExportCodeArgs = { uri: m.source, module: m.module, target: t.target };
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Torch-MLIR Lens: export code of ${m.module}…` },
    () => deps.client.executeServerCommand<ExportCodeResponse | null>(SERVER_COMMANDS.exportCode, [args]),
  );
  if (!result?.code) throw new Error(`no export code came back for ${m.module}`);
  await vscode.env.clipboard.writeText(result.code);
  const through = result.rewrites.length ? ` (rewrites inlined: ${result.rewrites.join(', ')})` : '';
  void vscode.window.showInformationMessage(
    `Torch-MLIR Lens: copied the code that exports ${m.module} as ${targetTitle(t.target)} IR with plain torch-mlir${through}.`,
  );
}

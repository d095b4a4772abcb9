// "Verify Module Against Eager PyTorch": the server JITs the module's LLVM IR (or runs it
// compiled by IREE, for "Verify on IREE CPU") and compares it with eager PyTorch; the verdict
// (and IREE's time beside eager's) comes back as a notification, the details in the output.

import * as vscode from 'vscode';
import { asModuleArg, moduleOfArg, type CommandDeps } from './commandArgs';
import { graphViews } from './graphView';
import { SERVER_COMMANDS, VerifyRequest, targetTitle, type CompiledSpeed, type VerifyParams, type VerifyResponse } from './protocol';

export async function verifyModule(deps: CommandDeps, arg?: unknown): Promise<void> {
  const { client } = deps;
  const m = await moduleOfArg(deps, arg);
  if (!m) return;
  // The backend to run is the argument's only (a lens's "Verify on IREE CPU"), not a pane's.
  const target = asModuleArg(arg).target;
  const params: VerifyParams = { uri: m.source, module: m.module, ...(target ? { target } : {}) };
  const on = target ? ` on ${targetTitle(target)}` : '';
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Torch-MLIR Lens: verifying ${m.module}${on} against eager PyTorch…` },
    () =>
      client.hasServerCommand(SERVER_COMMANDS.verify)
        ? client.executeServerCommand<VerifyResponse | null>(SERVER_COMMANDS.verify, [params])
        : client.request<VerifyResponse | null>(VerifyRequest.method, params),
  );
  client.log.info(`verify ${m.module}: ${JSON.stringify(result)}`);
  graphViews()?.refreshSource(vscode.Uri.parse(m.source)); // its verdict on an open graph's nodes
  const ok = result?.ok === true;
  const speed = result?.speed ? ` · ${speedText(result.speed)}` : '';
  const summary = (result?.message || (ok ? 'matches eager PyTorch' : 'see the output for details')) + speed;
  const show = ok ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
  const picked = await show(`Torch-MLIR Lens: ${m.module}: ${summary}`, 'Show Output');
  if (picked) client.log.show();
}

/** "IREE CPU 0.061 ms · eager 19.1 ms": a compiled module's time per call beside eager's. */
export function speedText(speed: CompiledSpeed): string {
  const ms = (v: number | null) => (v === null ? '?' : `${Number(v.toPrecision(3))} ms`);
  return `${targetTitle(speed.target)} ${ms(speed.compiledMs)} · eager ${ms(speed.eagerMs)}`;
}

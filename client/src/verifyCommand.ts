// "Verify Module Against Eager PyTorch": the server JITs the module's LLVM IR and compares it
// with eager PyTorch; the verdict comes back as a notification, the details in the output.

import * as vscode from 'vscode';
import { moduleOfArg, type CommandDeps } from './commandArgs';
import { SERVER_COMMANDS, VerifyRequest, type VerifyParams, type VerifyResponse } from './protocol';

export async function verifyModule(deps: CommandDeps, arg?: unknown): Promise<void> {
  const { client } = deps;
  const m = await moduleOfArg(deps, arg);
  if (!m) return;
  const params: VerifyParams = { uri: m.source, module: m.module };
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Torch-MLIR Lens: verifying ${m.module} against eager PyTorch…` },
    () =>
      client.hasServerCommand(SERVER_COMMANDS.verify)
        ? client.executeServerCommand<VerifyResponse | null>(SERVER_COMMANDS.verify, [params])
        : client.request<VerifyResponse | null>(VerifyRequest.method, params),
  );
  client.log.info(`verify ${m.module}: ${JSON.stringify(result)}`);
  const ok = result?.ok === true;
  const summary = result?.message || (ok ? 'matches eager PyTorch' : 'see the output for details');
  const show = ok ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
  const picked = await show(`Torch-MLIR Lens: ${m.module}: ${summary}`, 'Show Output');
  if (picked) client.log.show();
}

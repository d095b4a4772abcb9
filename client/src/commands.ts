// The palette commands. Code lenses from the server call `torchMlirLens.showIr` [uri, module,
// target] (client-side) and the server's `torchMlirLens.exportModule` {uri, module, target};
// the latter without `output` is completed here with a save dialog.

import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { IrPanes } from './irPanes';
import type { LensClient } from './languageClient';
import type { Linking } from './linking';
import { pickPass } from './passPicker';
import { SCHEME, type PaneSpec } from './paneSpec';
import { pickModule, pickTarget, type ModuleChoice, type TargetChoice } from './picking';
import { SERVER_COMMANDS, VerifyRequest, targetTitle, type ExportModuleResponse, type ExportReproResponse, type VerifyParams, type VerifyResponse } from './protocol';
import { setting } from './settings';

interface ModuleArg {
  uri?: string;
  module?: string;
  target?: string;
}

function asModuleArg(x: unknown): ModuleArg {
  return x && typeof x === 'object' && !(x instanceof vscode.Uri) ? (x as ModuleArg) : {};
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export function registerCommands(
  context: vscode.ExtensionContext,
  client: LensClient,
  panes: IrPanes,
  linking: Linking,
): void {
  const run =
    <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
    async (...args: A) => {
      try {
        await fn(...args);
      } catch (e) {
        client.log.error(errorMessage(e));
        void vscode.window.showErrorMessage(`Torch-MLIR Lens: ${errorMessage(e)}`, 'Show Output').then((a) => a && client.log.show());
      }
    };

  async function resolveModule(uri?: unknown, module?: string): Promise<ModuleChoice | undefined> {
    if (typeof uri === 'string' && module) return { source: uri, module };
    if (uri instanceof vscode.Uri && module) return { source: uri.toString(), module };
    return pickModule(client, panes, uri);
  }

  async function resolveTarget(target?: string, title?: string): Promise<TargetChoice | undefined> {
    return target ? { target } : pickTarget(title);
  }

  function activePane(): PaneSpec | undefined {
    const doc = vscode.window.activeTextEditor?.document;
    return doc?.uri.scheme === SCHEME ? panes.get(doc.uri)?.spec : undefined;
  }

  async function showIr(uri?: unknown, module?: string, target?: string): Promise<void> {
    const m = await resolveModule(uri, module);
    if (!m) return;
    const t = await resolveTarget(target, `Torch-MLIR Lens: IR of ${m.module}`);
    if (!t) return;
    await panes.open({ source: m.source, module: m.module, ...t });
  }

  async function showIrAfterPass(): Promise<void> {
    let base = activePane();
    if (!base) {
      const m = await pickModule(client, panes);
      if (!m) return;
      const t = await pickTarget(`Torch-MLIR Lens: pipeline of ${m.module}`);
      if (!t) return;
      base = { source: m.source, module: m.module, ...t };
    }
    const { pass: _pass, passName: _name, ...withoutPass } = base;
    await pickPass(client, panes, withoutPass);
  }

  async function exportModuleAs(arg?: unknown): Promise<void> {
    const a = { ...paneArg(), ...asModuleArg(arg) };
    const m = await resolveModule(a.uri, a.module);
    if (!m) return;
    const t = await resolveTarget(a.target ?? setting('defaultTarget', 'linalg'));
    if (!t) return;
    const format = await vscode.window.showQuickPick(
      [
        { label: 'MLIR text', description: '.mlir', bytecode: false },
        { label: 'MLIR bytecode', description: '.mlirbc', bytecode: true },
      ],
      { title: `Export ${m.module} (${targetTitle(t.target)})`, placeHolder: 'Format' },
    );
    if (!format) return;
    const src = vscode.Uri.parse(m.source);
    const ext = format.bytecode ? 'mlirbc' : 'mlir';
    const folder = src.scheme === 'file' ? vscode.Uri.joinPath(src, '..') : vscode.workspace.workspaceFolders?.[0]?.uri;
    const name = `${m.module}.${t.target}.${ext}`;
    const suggested = folder ? vscode.Uri.joinPath(folder, name) : undefined;
    const dest = await vscode.window.showSaveDialog({
      defaultUri: suggested,
      filters: format.bytecode ? { 'MLIR bytecode': ['mlirbc'] } : { MLIR: ['mlir'] },
      title: `Export ${m.module} as ${targetTitle(t.target)} IR`,
    });
    if (!dest) return;
    // The save dialog (the system's, or VS Code's own in remote windows) has already asked
    // whether to replace an existing file: a second question would only repeat it. The server
    // refuses to replace a file unless told `overwrite` (contracts: the client asks first).
    const exists = fs.existsSync(dest.fsPath);
    const result = await client.executeServerCommand<ExportModuleResponse | undefined>(SERVER_COMMANDS.exportModule, [
      { uri: m.source, module: m.module, target: t.target, output: dest.fsPath, bytecode: format.bytecode, overwrite: exists },
    ]);
    const where = result?.path ?? dest.fsPath;
    const open = format.bytecode ? [] : ['Open'];
    const picked = await vscode.window.showInformationMessage(
      `Torch-MLIR Lens: exported ${m.module} to ${where}${result?.bytes !== undefined ? ` (${result.bytes} bytes)` : ''}.`,
      ...open,
    );
    if (picked === 'Open') await vscode.window.showTextDocument(vscode.Uri.file(where));
  }

  async function exportReproTo(arg?: unknown): Promise<void> {
    const a = { ...paneArg(), ...asModuleArg(arg) };
    const m = await resolveModule(a.uri, a.module);
    if (!m) return;
    const t = await resolveTarget(a.target, `Torch-MLIR Lens: repro of ${m.module} for which target?`);
    if (!t) return;
    const dirs = await vscode.window.showOpenDialog({
      canSelectFolders: true,
      canSelectFiles: false,
      canSelectMany: false,
      defaultUri: vscode.Uri.parse(m.source).scheme === 'file' ? vscode.Uri.joinPath(vscode.Uri.parse(m.source), '..') : undefined,
      openLabel: 'Write repro here',
    });
    if (!dirs?.length) return;
    const res = await client.executeServerCommand<ExportReproResponse | undefined>(SERVER_COMMANDS.exportRepro, [
      { uri: m.source, module: m.module, target: t.target, outputDir: dirs[0].fsPath },
    ]);
    if (res?.command) client.log.info(`repro for ${m.module} (${t.target}): ${res.command}`);
    const picked = await vscode.window.showInformationMessage(
      `Torch-MLIR Lens: repro written${res?.mlirPath ? ` to ${res.mlirPath}` : ''}.`,
      ...(res?.command ? ['Copy command'] : []),
      ...(res?.mlirPath ? ['Open .mlir'] : []),
    );
    if (picked === 'Copy command' && res?.command) await vscode.env.clipboard.writeText(res.command);
    if (picked === 'Open .mlir' && res?.mlirPath) await vscode.window.showTextDocument(vscode.Uri.file(res.mlirPath));
  }

  async function verifyModule(arg?: unknown): Promise<void> {
    const a = { ...paneArg(), ...asModuleArg(arg) };
    const m = await resolveModule(a.uri, a.module);
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

  /** Arguments implied by the active pane, so pane title-bar buttons need none. */
  function paneArg(): ModuleArg {
    const spec = activePane();
    return spec ? { uri: spec.source, module: spec.module, target: spec.target === 'custom' ? undefined : spec.target } : {};
  }

  // The server's lens "Export…" sends no destination: ask for one here.
  client.intercept(SERVER_COMMANDS.exportModule, async (args) => {
    const a = asModuleArg(args[0]) as ModuleArg & { output?: string };
    if (a.output) return false;
    await run(exportModuleAs)(a);
    return true;
  });
  client.intercept(SERVER_COMMANDS.exportRepro, async (args) => {
    const a = asModuleArg(args[0]) as ModuleArg & { outputDir?: string };
    if (a.outputDir) return false;
    await run(exportReproTo)(a);
    return true;
  });

  const reg = (id: string, fn: (...args: never[]) => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run(fn as (...args: unknown[]) => Promise<unknown>)));
  reg('torchMlirLens.showIr', showIr);
  reg('torchMlirLens.showIrAfterPass', showIrAfterPass);
  reg('torchMlirLens.exportModuleAs', exportModuleAs);
  reg('torchMlirLens.exportReproTo', exportReproTo);
  reg('torchMlirLens.verifyModule', verifyModule);
  reg('torchMlirLens.restartServer', () => client.restart());
  reg('torchMlirLens.showOutput', async () => client.showOutput());
  reg('torchMlirLens.toggleColorBands', () => linking.toggleBands());
  reg('torchMlirLens.refreshPane', async () => {
    const doc = vscode.window.activeTextEditor?.document;
    if (doc?.uri.scheme === SCHEME) await panes.refresh(doc.uri);
  });
}

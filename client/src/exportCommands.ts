// "Export Module…" and "Export Repro…": the format, the save and folder dialogs, then the
// server's `exportModule`/`exportRepro` and what to do with the result. An IREE target exports
// its compiled module (`.vmfb`), with no format to pick. The lenses' "Export…"
// comes here too (commands.ts intercepts it when it names no destination).
//
// `chosenByUser: true` tells the server the path came from a dialog here, which lets it write
// outside the workspace folders (never over a source file). It is set only below, on a dialog's
// answer; a destination that arrives in a command's arguments loses it (`withoutUserChoice`).

import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { moduleOfArg, resolveTarget, type CommandDeps, type ModuleTarget } from './commandArgs';
import {
  IREE_TARGETS,
  SERVER_COMMANDS,
  targetTitle,
  type ExportModuleArgs,
  type ExportModuleResponse,
  type ExportReproArgs,
  type ExportReproResponse,
} from './protocol';
import { setting } from './settings';

interface Format {
  label: string;
  description: string;
  bytecode: boolean;
}

/** What an IREE target exports: its compiled module, for IREE's runtime. */
const COMPILED: Format = { label: 'IREE module', description: '.vmfb', bytecode: false };

export async function exportModuleAs(deps: CommandDeps, arg?: unknown): Promise<void> {
  const m = await moduleOfArg(deps, arg);
  if (!m) return;
  const t = await resolveTarget(m.target ?? setting('defaultTarget', 'linalg'));
  if (!t) return;
  // An IREE target's export is its compiled module (.vmfb, for the ireeArchs architecture).
  const format = IREE_TARGETS.includes(t.target) ? COMPILED : await pickFormat(m, t.target);
  if (!format) return;
  const dest = await askDestination(m, t.target, format);
  if (!dest) return;
  // The save dialog (the system's, or VS Code's own in remote windows) has already asked
  // whether to replace an existing file: a second question would only repeat it. The server
  // refuses to replace a file unless told `overwrite` (contracts: the client asks first).
  const exists = fs.existsSync(dest.fsPath);
  const result = await deps.client.executeServerCommand<ExportModuleResponse | undefined>(SERVER_COMMANDS.exportModule, [
    { uri: m.source, module: m.module, target: t.target, output: dest.fsPath, bytecode: format.bytecode, overwrite: exists, chosenByUser: true } satisfies ExportModuleArgs,
  ]);
  const where = result?.path ?? dest.fsPath;
  const open = format.bytecode || format === COMPILED ? [] : ['Open'];
  const leftOut = result?.leftOut ? ` ${result.leftOut}` : '';
  const picked = await vscode.window.showInformationMessage(
    `Torch-MLIR Lens: exported ${m.module} to ${where}${result?.bytes !== undefined && result?.bytes !== null ? ` (${result.bytes} bytes)` : ''}.${leftOut}`,
    ...open,
  );
  if (picked === 'Open') await vscode.window.showTextDocument(vscode.Uri.file(where));
}

function pickFormat(m: ModuleTarget, target: string): Thenable<Format | undefined> {
  return vscode.window.showQuickPick(
    [
      { label: 'MLIR text', description: '.mlir', bytecode: false },
      { label: 'MLIR bytecode', description: '.mlirbc', bytecode: true },
    ],
    { title: `Export ${m.module} (${targetTitle(target)})`, placeHolder: 'Format' },
  );
}

/** The save dialog, on `<module>.<target>.mlir[bc]` beside the source (else in the first folder). */
function askDestination(m: ModuleTarget, target: string, format: Format): Thenable<vscode.Uri | undefined> {
  const src = vscode.Uri.parse(m.source);
  const ext = format === COMPILED ? 'vmfb' : format.bytecode ? 'mlirbc' : 'mlir';
  const folder = src.scheme === 'file' ? vscode.Uri.joinPath(src, '..') : vscode.workspace.workspaceFolders?.[0]?.uri;
  const name = `${m.module}.${target}.${ext}`;
  return vscode.window.showSaveDialog({
    defaultUri: folder ? vscode.Uri.joinPath(folder, name) : undefined,
    filters: format === COMPILED ? { 'IREE module': ['vmfb'] } : format.bytecode ? { 'MLIR bytecode': ['mlirbc'] } : { MLIR: ['mlir'] },
    title: format === COMPILED ? `Export ${m.module} compiled by ${targetTitle(target)}` : `Export ${m.module} as ${targetTitle(target)} IR`,
  });
}

export async function exportReproTo(deps: CommandDeps, arg?: unknown): Promise<void> {
  const m = await moduleOfArg(deps, arg);
  if (!m) return;
  const t = await resolveTarget(m.target, `Torch-MLIR Lens: repro of ${m.module} for which target?`);
  if (!t) return;
  const source = vscode.Uri.parse(m.source);
  const dirs = await vscode.window.showOpenDialog({
    canSelectFolders: true,
    canSelectFiles: false,
    canSelectMany: false,
    defaultUri: source.scheme === 'file' ? vscode.Uri.joinPath(source, '..') : undefined,
    openLabel: 'Write repro here',
  });
  if (!dirs?.length) return;
  const res = await deps.client.executeServerCommand<ExportReproResponse | undefined>(SERVER_COMMANDS.exportRepro, [
    { uri: m.source, module: m.module, target: t.target, outputDir: dirs[0].fsPath, chosenByUser: true } satisfies ExportReproArgs,
  ]);
  if (res?.command) deps.client.log.info(`repro for ${m.module} (${t.target}): ${res.command}`);
  await offerRepro(res);
}

/** Says where the repro went; offers to copy its command line and to open its .mlir. */
async function offerRepro(res: ExportReproResponse | undefined): Promise<void> {
  const picked = await vscode.window.showInformationMessage(
    `Torch-MLIR Lens: repro written${res?.mlirPath ? ` to ${res.mlirPath}` : ''}.`,
    ...(res?.command ? ['Copy command'] : []),
    ...(res?.mlirPath ? ['Open .mlir'] : []),
  );
  if (picked === 'Copy command' && res?.command) await vscode.env.clipboard.writeText(res.command);
  if (picked === 'Open .mlir' && res?.mlirPath) await vscode.window.showTextDocument(vscode.Uri.file(res.mlirPath));
}

/**
 * A command's argument object without `chosenByUser`: a destination that came in a command's
 * arguments (another extension, a command link) was not chosen in this client's dialog.
 */
export function withoutUserChoice(arg: unknown): unknown {
  if (!arg || typeof arg !== 'object' || !('chosenByUser' in arg)) return arg;
  const { chosenByUser: _dropped, ...rest } = arg as Record<string, unknown>;
  return rest;
}

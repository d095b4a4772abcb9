// The palette commands, registered here; each lives in the module of its job (showIrCommands,
// exportCommands, exportCodeCommand, verifyCommand, heatBands; their arguments: commandArgs). Code lenses from the server
// call `torchMlirLens.showIr` [uri, module, target] (client-side) and the server's
// `torchMlirLens.exportModule`/`exportRepro` {uri, module, target}; those without a
// destination are completed here with a dialog.

import * as vscode from 'vscode';
import { asModuleArg, type CommandDeps } from './commandArgs';
import { copyExportCode } from './exportCodeCommand';
import { exportModuleAs, exportReproTo, withoutUserChoice } from './exportCommands';
import { showGraph } from './graphView';
import { profileModule, type HeatBands } from './heatBands';
import type { IrPanes } from './irPanes';
import type { LensClient } from './languageClient';
import type { Linking } from './linking';
import { SCHEME, type PaneSpec } from './paneSpec';
import { SERVER_COMMANDS } from './protocol';
import { setting } from './settings';
import { showIr, showIrAfterPass } from './showIrCommands';
import { verifyModule } from './verifyCommand';

type Command = (...args: never[]) => Promise<unknown>;

export function registerCommands(context: vscode.ExtensionContext, client: LensClient, panes: IrPanes, linking: Linking, heat: HeatBands): void {
  const deps: CommandDeps = { client, panes };
  const run = reportingErrors(client.log);
  completeServerExports(deps, run);
  // The lens "Time on IREE CPU" runs the server's profile here, which draws its heat band.
  client.intercept(SERVER_COMMANDS.profile, async (args) => {
    await run(profileModule)(deps, heat, args[0]);
    return true;
  });
  const commands: Record<string, Command> = {
    'torchMlirLens.showIr': (uri?: unknown, module?: string, target?: string) => showIr(deps, uri, module, target),
    'torchMlirLens.showIrAfterPass': () => showIrAfterPass(deps),
    'torchMlirLens.exportModuleAs': (arg?: unknown) => exportModuleAs(deps, arg),
    'torchMlirLens.exportReproTo': (arg?: unknown) => exportReproTo(deps, arg),
    'torchMlirLens.copyExportCode': (arg?: unknown) => copyExportCode(deps, arg),
    'torchMlirLens.verifyModule': (arg?: unknown) => verifyModule(deps, arg),
    'torchMlirLens.showGraph': (uri?: unknown, module?: string) => showGraph(context, deps, uri, module),
    'torchMlirLens.profileModule': (arg?: unknown) => profileModule(deps, heat, arg),
    'torchMlirLens.restartServer': () => client.restart(),
    'torchMlirLens.showOutput': async () => client.showOutput(),
    'torchMlirLens.toggleColorBands': () => linking.toggleBands(),
    'torchMlirLens.refreshPane': () => refreshActivePane(panes),
    'torchMlirLens.toggleInlineBlocks': () => toggleInlineBlocks(panes),
    'torchMlirLens.showOtherPath': () => showOtherPath(panes),
  };
  for (const [id, fn] of Object.entries(commands)) {
    context.subscriptions.push(vscode.commands.registerCommand(id, run(fn as (...args: unknown[]) => Promise<unknown>)));
  }
}

/** Wraps a command so that its failure is logged and shown with a way to the output. */
function reportingErrors(log: vscode.LogOutputChannel) {
  return <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
    async (...args: A): Promise<void> => {
      try {
        await fn(...args);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        log.error(message);
        void vscode.window.showErrorMessage(`Torch-MLIR Lens: ${message}`, 'Show Output').then((a) => a && log.show());
      }
    };
}

/**
 * The server's lens "Export…" and "Export Repro…" send no destination: ask for one here. One
 * that names a destination goes on to the server, as not chosen in a dialog (the server then
 * keeps it inside the workspace).
 */
function completeServerExports(deps: CommandDeps, run: ReturnType<typeof reportingErrors>): void {
  deps.client.intercept(SERVER_COMMANDS.exportModule, async (args) => {
    const a = asModuleArg(args[0]) as { output?: string };
    if (a.output) {
      args[0] = withoutUserChoice(args[0]);
      return false;
    }
    await run(exportModuleAs)(deps, args[0]);
    return true;
  });
  deps.client.intercept(SERVER_COMMANDS.exportRepro, async (args) => {
    const a = asModuleArg(args[0]) as { outputDir?: string };
    if (a.outputDir) {
      args[0] = withoutUserChoice(args[0]);
      return false;
    }
    await run(exportReproTo)(deps, args[0]);
    return true;
  });
}

/** The active IR pane again with its repeated blocks the other way: inline, or once each. */
async function toggleInlineBlocks(panes: IrPanes): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const pane = editor?.document.uri.scheme === SCHEME ? panes.get(editor.document.uri) : undefined;
  if (!editor || !pane) throw new Error('open an IR pane first (Show IR…)');
  const source = vscode.Uri.parse(pane.spec.source);
  const once = pane.spec.blocks ? pane.spec.blocks === 'stitched' : setting<boolean>('stitchBlocks', true, source);
  const spec: PaneSpec = { ...pane.spec, blocks: once ? 'inline' : 'stitched' };
  await panes.open(spec, editor.viewColumn);
}

/** The active IR pane's module through the other path, beside it: via torch.onnx.export and the
 *  ONNX importer from a torch.export pane, and back; so a user sees which path a backend takes
 *  and where the two differ. */
async function showOtherPath(panes: IrPanes): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const pane = editor?.document.uri.scheme === SCHEME ? panes.get(editor.document.uri) : undefined;
  if (!editor || !pane) throw new Error('open an IR pane first (Show IR…)');
  if (pane.spec.source.endsWith('.onnx')) throw new Error('this pane is of an ONNX model already: the other path starts from a PyTorch module');
  const { via: _via, ...fx } = pane.spec;
  const spec: PaneSpec = pane.spec.via === 'onnx' ? fx : { ...fx, via: 'onnx' };
  await panes.open(spec, vscode.ViewColumn.Beside);
}

async function refreshActivePane(panes: IrPanes): Promise<void> {
  const doc = vscode.window.activeTextEditor?.document;
  if (doc?.uri.scheme === SCHEME) await panes.refresh(doc.uri);
}

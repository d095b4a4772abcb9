// Entry point: wires the modules together. Each module has one job; see their headers.

import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { IrPanes } from './irPanes';
import { LensClient } from './languageClient';
import { Linking } from './linking';
import { StatusBar } from './statusBar';
import { isTrusted, onTrustGranted } from './trust';

let lensClient: LensClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Torch-MLIR Lens', { log: true });
  const status = new StatusBar();
  const client = new LensClient(context, log, status);
  lensClient = client;
  const panes = new IrPanes(client);
  const linking = new Linking(panes);
  context.subscriptions.push(log, status, client, panes, linking);
  registerCommands(context, client, panes, linking);
  context.subscriptions.push(
    onTrustGranted(async () => {
      log.info('workspace trusted: enabling lowering');
      await client.setTrusted(true);
      status.set('starting', 'Workspace trusted: starting the lowering worker.');
      panes.refreshAll(); // panes opened while untrusted show an explanation, not IR
    }),
  );
  if (!isTrusted()) {
    status.set('untrusted');
    log.info('workspace not trusted: the server runs no user code until you trust it');
  }
  await client.start();
}

export async function deactivate(): Promise<void> {
  await lensClient?.stop();
}

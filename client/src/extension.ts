// Entry point: wires the modules together. Each module has one job; see their headers.

import * as vscode from 'vscode';
import { registerCommands } from './commands';
import { HeatBands } from './heatBands';
import { registerIrFolding } from './irFolding';
import { IrPanes } from './irPanes';
import { LensClient } from './languageClient';
import { Linking } from './linking';
import { OnnxEditors } from './onnxEditor';
import { StatusBar } from './statusBar';
import { testHooks, type TestApi } from './testHooks';
import { Trust } from './trust';

let lensClient: LensClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<TestApi | undefined> {
  const log = vscode.window.createOutputChannel('Torch-MLIR Lens', { log: true });
  const status = new StatusBar();
  const trust = new Trust();
  const client = new LensClient(context, log, status, trust);
  lensClient = client;
  const panes = new IrPanes(client);
  client.sourceOf = (uri) => panes.get(uri)?.spec.source;
  const linking = new Linking(panes);
  const heat = new HeatBands();
  const onnx = new OnnxEditors(client, panes, linking, context.extensionUri);
  context.subscriptions.push(log, status, trust, client, panes, linking, heat, onnx, registerIrFolding());
  registerCommands(context, client, panes, linking, heat);
  context.subscriptions.push(
    trust.onGranted(async () => {
      log.info('workspace trusted: enabling lowering');
      await client.setTrusted(true); // each server after its start in progress, if any
      panes.refreshAll(); // panes opened while untrusted show an explanation, not IR
    }),
  );
  if (!trust.trusted) log.info('workspace not trusted: the servers run no user code until you trust it');
  const api = testHooks(context, { client, trust, panes, linking, status, heat, onnx });
  await client.start();
  return api;
}

export async function deactivate(): Promise<void> {
  await lensClient?.stop();
}

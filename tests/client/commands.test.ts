// The palette commands as wired by registerCommands: every command the extension contributes
// has a handler, the lenses' "Export…" without a destination is completed by the client (its
// dialogs) and with one goes to the server, and a command about a module goes to the server of
// that module's document.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type * as vscode from 'vscode';
import { registerCommands } from '../../client/src/commands';
import type { HeatBands } from '../../client/src/heatBands';
import type { IrPanes } from '../../client/src/irPanes';
import type { Linking } from '../../client/src/linking';
import { SERVER_COMMANDS, VERIFY } from '../../client/src/protocol';
import { commands, fake, Uri } from './fakes/vscode';
import { harness, type Harness } from './routingHarness';

const REPO = path.resolve(__dirname, '..', '..', '..');
const ALPHA = Uri.file('/ws/alpha/model.py').toString();
const BETA = Uri.file('/ws/beta/model.py').toString();

/** Panes none of these commands reach before asking the user (no pane is active). */
const NO_PANES = { get: () => undefined } as unknown as IrPanes;

describe('palette commands', () => {
  let h: Harness;
  let subscriptions: { dispose(): unknown }[];
  beforeEach(async () => {
    fake.reset();
    fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    h = await harness();
    subscriptions = [];
    registerCommands({ subscriptions } as unknown as vscode.ExtensionContext, h.client, NO_PANES, {} as Linking, {} as HeatBands);
  });
  afterEach(() => {
    for (const d of subscriptions) d.dispose();
    h.dispose();
  });

  it('every command the extension contributes has a handler', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { contributes: { commands: { command: string }[] } };
    const contributed = manifest.contributes.commands.map((c) => c.command);
    assert.deepEqual(contributed.filter((c) => !fake.commands().includes(c)), []);
  });

  it('the lens\'s "Export…" without a destination asks for one here; with one, it goes to the server', async () => {
    await commands.executeCommand(SERVER_COMMANDS.exportModule, { uri: BETA, module: 'MLP', target: 'tosa' });
    assert.deepEqual(fake.quickPickTitles(), ['Export MLP (TOSA)']); // the format, then (dismissed here) the save dialog
    assert.equal(h.calls.length, 0);
    await commands.executeCommand(SERVER_COMMANDS.exportModule, { uri: BETA, module: 'MLP', target: 'tosa', output: '/tmp/MLP.tosa.mlir' });
    assert.deepEqual(h.calls.map((c) => [c.server, c.method, c.args[0]]), [['beta', 'command', SERVER_COMMANDS.exportModule]]);
  });

  it('a destination from the dialogs goes to the server as chosen by the user; one in the arguments does not', async () => {
    fake.answerQuickPicks('MLIR text');
    fake.answerDialogs(Uri.file('/elsewhere/MLP.tosa.mlir'));
    await commands.executeCommand(SERVER_COMMANDS.exportModule, { uri: BETA, module: 'MLP', target: 'tosa' });
    fake.answerDialogs(Uri.file('/elsewhere/repro'));
    await commands.executeCommand(SERVER_COMMANDS.exportRepro, { uri: BETA, module: 'MLP', target: 'tosa' });
    // A command link or another extension cannot claim the dialog's permission.
    await commands.executeCommand(SERVER_COMMANDS.exportModule, { uri: BETA, module: 'MLP', output: '/etc/x.mlir', chosenByUser: true });
    await commands.executeCommand(SERVER_COMMANDS.exportRepro, { uri: BETA, module: 'MLP', outputDir: '/etc', chosenByUser: true });
    assert.deepEqual(h.calls.map((c) => [c.args[0], c.args[1]]), [
      [SERVER_COMMANDS.exportModule, { uri: BETA, module: 'MLP', target: 'tosa', output: '/elsewhere/MLP.tosa.mlir', bytecode: false, overwrite: false, chosenByUser: true }],
      [SERVER_COMMANDS.exportRepro, { uri: BETA, module: 'MLP', target: 'tosa', outputDir: '/elsewhere/repro', chosenByUser: true }],
      [SERVER_COMMANDS.exportModule, { uri: BETA, module: 'MLP', output: '/etc/x.mlir' }],
      [SERVER_COMMANDS.exportRepro, { uri: BETA, module: 'MLP', outputDir: '/etc' }],
    ]);
  });

  it('the lens\'s "Export Repro…" without a folder asks for one here', async () => {
    await commands.executeCommand(SERVER_COMMANDS.exportRepro, { uri: ALPHA, module: 'MLP' });
    assert.deepEqual(fake.quickPickTitles(), ['Torch-MLIR Lens: repro of MLP for which target?']);
    assert.equal(h.calls.length, 0);
  });

  it("Verify goes to the server of the module's document", async () => {
    await commands.executeCommand('torchMlirLens.verifyModule', { uri: BETA, module: 'MLP' });
    assert.deepEqual(h.calls.map((c) => [c.server, c.method, c.args[0]]), [['beta', 'request', VERIFY]]);
  });
});

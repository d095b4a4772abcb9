// Where requests and commands go: to the server of the document they name (their `uri`), else
// to the active editor's (an IR pane counts as its source document), else the first folder's.
// Server commands are registered once for all folders and each call routed the same way.

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { FolderServer } from '../../client/src/folderServer';
import { SERVER_COMMANDS } from '../../client/src/protocol';
import { commands, fake, Uri, type TextDocument } from './fakes/vscode';
import { harness, settle, type Harness } from './routingHarness';

const ALPHA = Uri.file('/ws/alpha/model.py');
const BETA = Uri.file('/ws/beta/model.py');

/** Who answered a request or command (the stubbed servers answer with their label). */
const answeredBy = (r: unknown) => (r as { answeredBy: string }).answeredBy;

describe('requests and commands go to the server of their document', () => {
  let h: Harness;
  let alpha: TextDocument;
  let beta: TextDocument;
  beforeEach(async () => {
    fake.reset();
    fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    h = await harness();
    alpha = fake.open(ALPHA);
    beta = fake.open(BETA);
    await settle();
    h.clear();
  });
  afterEach(() => h.dispose());

  it("a request naming a document goes to that document's server, whatever editor is active", async () => {
    fake.activate(alpha);
    assert.equal(answeredBy(await h.client.request('torchMlirLens/modules', { uri: BETA.toString() })), 'beta');
    assert.equal(answeredBy(await h.client.request('torchMlirLens/modules', { uri: ALPHA.toString() })), 'alpha');
    assert.deepEqual(h.calls.map((c) => [c.server, c.args[0]]), [
      ['beta', 'torchMlirLens/modules'],
      ['alpha', 'torchMlirLens/modules'],
    ]);
  });

  it("a request naming no document goes to the active editor's server", async () => {
    fake.activate(beta);
    assert.equal(answeredBy(await h.client.request('torchMlirLens/serverInfo', {})), 'beta');
    fake.activate(alpha);
    assert.equal(answeredBy(await h.client.request('torchMlirLens/serverInfo', undefined)), 'alpha');
  });

  it("an IR pane's requests go to its source document's server", async () => {
    const pane = fake.open(Uri.parse('torch-mlir-lens:/MLP%20·%20linalg.mlir?source=beta'), 'mlir');
    h.client.sourceOf = (uri) => (uri.toString() === pane.uri.toString() ? BETA.toString() : undefined);
    fake.activate(pane);
    assert.equal(h.client.activeServer()?.label, 'beta');
    assert.equal(answeredBy(await h.client.request('torchMlirLens/lower', { module: 'MLP' })), 'beta');
  });

  it("with no editor: the first folder's server", async () => {
    fake.activate(undefined);
    assert.equal(answeredBy(await h.client.request('torchMlirLens/serverInfo', {})), 'alpha');
  });

  it("a server command (a lens's, or the palette's) goes to the server of its `uri` argument", async () => {
    fake.activate(alpha);
    // Registered when the client is made, before any server is ready (a lens may be clicked first).
    assert.ok(fake.commands().includes(SERVER_COMMANDS.verify));
    const r = await commands.executeCommand(SERVER_COMMANDS.verify, { uri: BETA.toString(), module: 'MLP' });
    assert.equal(answeredBy(r), 'beta');
    assert.deepEqual(h.calls.map((c) => [c.server, c.method, c.args[0]]), [['beta', 'command', SERVER_COMMANDS.verify]]);
  });

  it('an intercepted command is handled by the client; declined, it goes to its server', async () => {
    const seen: unknown[] = [];
    h.client.intercept(SERVER_COMMANDS.exportModule, async (args) => {
      seen.push(args[0]);
      return !(args[0] as { output?: string }).output; // no destination: the client asks for one
    });
    await commands.executeCommand(SERVER_COMMANDS.exportModule, { uri: ALPHA.toString(), module: 'MLP' });
    assert.equal(h.calls.length, 0, "an intercepted command reached a server");
    await commands.executeCommand(SERVER_COMMANDS.exportModule, { uri: ALPHA.toString(), module: 'MLP', output: '/tmp/m.mlir' });
    assert.deepEqual(h.calls.map((c) => [c.server, c.method]), [['alpha', 'command']]);
    assert.equal(seen.length, 2);
  });

  it('a command two servers advertise is registered once, and routed by its argument', async () => {
    mock.method(FolderServer.prototype, 'serverCommands', () => ['torchMlirLens.extra']);
    const ready = (s: FolderServer) => (s as unknown as { readyEmitter: { fire(): void } }).readyEmitter.fire();
    ready(h.client.serverFor(ALPHA)); // the fake, as VS Code, throws on a second registration
    ready(h.client.serverFor(BETA));
    assert.equal(fake.commands().filter((c) => c === 'torchMlirLens.extra').length, 1);
    assert.equal(answeredBy(await commands.executeCommand('torchMlirLens.extra', { uri: BETA.toString() })), 'beta');
  });

  it('"Restart Server" restarts the active editor\'s server; with no editor, every server', async () => {
    fake.activate(beta);
    await h.client.restart();
    assert.deepEqual(h.on('restart'), ['beta']);
    h.clear();
    fake.activate(undefined);
    await h.client.restart();
    assert.deepEqual(h.on('restart').sort(), ['alpha', 'beta']);
  });

  it("\"Show Output\" shows the active editor's server's output", () => {
    fake.activate(beta);
    h.client.showOutput();
    const shown = fake.logs().filter((l) => l.shown > 0).map((l) => l.name);
    assert.deepEqual(shown, ['Torch-MLIR Lens (beta)']);
  });
});

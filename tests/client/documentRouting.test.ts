// Which server serves a document: its workspace folder's (the innermost, for nested folders),
// the default server for files outside every folder and untitled files, a notebook cell its
// notebook's folder's. A document reaches only that server (the middleware every server's
// language client gets), and opening it starts that server only.

import assert from 'node:assert/strict';
import * as os from 'node:os';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DEFAULT_KEY } from '../../client/src/documentScope';
import type { FolderServer } from '../../client/src/folderServer';
import { SERVER_COMMANDS } from '../../client/src/protocol';
import { fake, Uri, type TextDocument } from './fakes/vscode';
import { harness, settle, type Harness } from './routingHarness';

/** The middleware a server gives its language client (private: it is how a server filters documents). */
interface WithMiddleware {
  middleware(): {
    didOpen(doc: TextDocument, next: (doc: TextDocument) => Promise<void>): Promise<void>;
    provideCodeLenses(doc: TextDocument, token: unknown, next: () => unknown[]): unknown;
  };
}

/** Whether `server`'s language client would send `doc` to its server (didOpen) and ask it for lenses. */
async function reaches(server: FolderServer, doc: TextDocument): Promise<boolean> {
  const m = (server as unknown as WithMiddleware).middleware();
  let opened = false;
  await m.didOpen(doc, async () => {
    opened = true;
  });
  const lenses = m.provideCodeLenses(doc, undefined, () => ['lens']) as unknown[];
  assert.equal(opened, lenses.length > 0, 'didOpen and lenses disagree');
  return opened;
}

/** The directory a server (and its worker) runs in. */
const workingDirectory = (server: FolderServer) => (server as unknown as { options: { cwd?: string } }).options.cwd;

describe('which server serves a document', () => {
  let h: Harness;
  beforeEach(() => fake.reset());
  afterEach(() => h.dispose());

  it("a file in folder A goes to A's server, a file in B to B's, and only there", async () => {
    fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    h = await harness();
    const a = fake.open(Uri.file('/ws/alpha/model.py'));
    await settle();
    assert.deepEqual(h.on('start'), ['alpha']);
    const b = fake.open(Uri.file('/ws/beta/deep/er/model.py'));
    await settle();
    assert.deepEqual(h.on('start'), ['alpha', 'beta']);
    const alpha = h.client.serverFor(a.uri);
    const beta = h.client.serverFor(b.uri);
    assert.equal(alpha.folder?.name, 'alpha');
    assert.equal(beta.folder?.name, 'beta');
    assert.deepEqual([await reaches(alpha, a), await reaches(alpha, b)], [true, false]);
    assert.deepEqual([await reaches(beta, a), await reaches(beta, b)], [false, true]);
  });

  it('nested folders: the innermost folder holding the file', async () => {
    fake.setFolders(Uri.file('/ws'), Uri.file('/ws/inner'));
    h = await harness();
    const inner = fake.open(Uri.file('/ws/inner/model.py'));
    const outer = fake.open(Uri.file('/ws/top.py'));
    const lookalike = fake.open(Uri.file('/ws/inner2/model.py')); // a sibling whose name starts like "inner"
    await settle();
    assert.equal(h.client.serverFor(inner.uri).label, 'inner');
    assert.equal(h.client.serverFor(outer.uri).label, 'ws');
    assert.equal(h.client.serverFor(lookalike.uri).label, 'ws');
    assert.deepEqual(h.on('start').sort(), ['inner', 'ws']);
    assert.equal(await reaches(h.client.serverFor(outer.uri), inner), false, "the outer folder's server must not get the inner folder's file");
  });

  it('a file outside every folder and an untitled file: one default server', async () => {
    fake.setFolders(Uri.file('/ws/alpha'));
    h = await harness();
    const solo = fake.open(Uri.file('/elsewhere/solo.py'));
    const untitled = fake.open(Uri.parse('untitled:Untitled-1'));
    await settle();
    const server = h.client.serverFor(solo.uri);
    assert.equal(server, h.client.serverFor(untitled.uri));
    assert.equal(server.key, DEFAULT_KEY);
    assert.equal(server.folder, undefined);
    assert.deepEqual(h.on('start'), ['no folder']);
    assert.ok(await reaches(server, untitled));
    assert.equal(await reaches(h.client.serverFor(Uri.file('/ws/alpha/a.py')), solo), false);
  });

  it('a window without folders: one default server, working in a neutral directory', async () => {
    h = await harness();
    const doc = fake.open(Uri.file('/home/me/models/model.py'));
    fake.open(Uri.file('/tmp/other.py'));
    await settle();
    assert.deepEqual(h.on('start'), ['no folder']);
    assert.equal(workingDirectory(h.client.serverFor(doc.uri)), os.tmpdir());
  });

  it("a folder's server never works in its folder (nothing of it is importable before trust)", async () => {
    fake.setFolders(Uri.file('/ws/alpha'));
    h = await harness();
    assert.equal(workingDirectory(h.client.serverFor(Uri.file('/ws/alpha/sub/model.py'))), os.tmpdir());
  });

  it("a notebook cell goes to its notebook's folder, though its scheme is not the folder's", async () => {
    // A remote window: folders and notebooks are `vscode-remote:`, cells `vscode-notebook-cell:`.
    const remote = (p: string) => Uri.parse(`vscode-remote://host:8080${p}`);
    fake.setFolders(remote('/ws/alpha'), remote('/ws/beta'));
    h = await harness();
    const cell = (i: number) => Uri.parse(`vscode-notebook-cell://host:8080/ws/beta/nb.ipynb#W${i}sZmlsZQ==`);
    const [first, second] = fake.openNotebook(remote('/ws/beta/nb.ipynb'), [cell(0), cell(1)]);
    await settle();
    assert.deepEqual(h.on('start'), ['beta']);
    const beta = h.client.serverFor(first.uri);
    assert.equal(beta.folder?.name, 'beta');
    assert.equal(h.client.serverFor(second.uri), beta);
    assert.ok(await reaches(beta, second));
  });

  it("a cell of a notebook not listed yet: its notebook's path decides", async () => {
    fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    h = await harness();
    fake.open(Uri.parse('vscode-notebook-cell:/ws/beta/nb.ipynb#W0sZmlsZQ=='));
    await settle();
    assert.deepEqual(h.on('start'), ['beta']);
  });

  it('documents no server serves start none: other languages, other schemes', async () => {
    fake.setFolders(Uri.file('/ws/alpha'));
    h = await harness();
    fake.open(Uri.file('/ws/alpha/notes.md'), 'markdown');
    fake.open(Uri.parse('git:/ws/alpha/model.py?ref=HEAD'), 'python');
    fake.open(Uri.parse('output:extension-output-torch-mlir-lens'), 'log');
    await settle();
    assert.deepEqual(h.on('start'), []);
    assert.deepEqual(h.client.all(), []);
  });

  it('on activation, the Python files already open start their servers', async () => {
    fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    fake.open(Uri.file('/ws/beta/model.py'), 'python', true);
    h = await harness();
    assert.deepEqual(h.on('start'), []);
    await h.client.start();
    assert.deepEqual(h.on('start'), ['beta']);
  });

  it('a disposed client stops listening to the window and gives back its commands', async () => {
    fake.installPythonExtension();
    fake.setFolders(Uri.file('/ws/alpha'));
    h = await harness();
    fake.open(Uri.file('/ws/alpha/a.py'));
    await settle();
    assert.ok(fake.commands().includes(SERVER_COMMANDS.verify));
    h.client.dispose();
    const left = Object.entries(fake.listeners()).filter(([event, n]) => n > 0 && event !== 'trustGranted'); // the Trust's own
    assert.deepEqual(left, []);
    assert.deepEqual(fake.commands(), []);
  });

  it('a multi-root window gives each server its own output; a single folder shares the client log', async () => {
    fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    h = await harness();
    const alpha = h.client.serverFor(Uri.file('/ws/alpha/a.py'));
    const outside = h.client.serverFor(Uri.file('/x/b.py'));
    assert.equal(alpha.log.name, 'Torch-MLIR Lens (alpha)');
    assert.equal(outside.log.name, 'Torch-MLIR Lens (no folder)');
    h.dispose();

    fake.setFolders(Uri.file('/ws/alpha'));
    h = await harness();
    assert.equal(h.client.serverFor(Uri.file('/ws/alpha/a.py')).log, h.client.log);
  });
  it("trust is per folder: a folder's server trusts its folder only; the default server the files it is given", async () => {
    fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    h = await harness();
    const options = (server: FolderServer, trusted: boolean) =>
      (server as unknown as { trustOptions(t: boolean): unknown }).trustOptions(trusted);
    const alpha = h.client.serverFor(Uri.file('/ws/alpha/a.py'));
    const outside = h.client.serverFor(Uri.file('/x/b.py'));
    assert.deepEqual(options(alpha, true), { trusted: true, trustedFolders: [Uri.file('/ws/alpha').toString()], trustOpenedDocuments: false });
    assert.deepEqual(options(alpha, false), { trusted: false, trustedFolders: [], trustOpenedDocuments: false });
    assert.deepEqual(options(outside, true), { trusted: true, trustedFolders: [], trustOpenedDocuments: true });
  });
});

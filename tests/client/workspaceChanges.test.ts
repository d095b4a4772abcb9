// What the servers do when the window changes under them: a folder removed or added (its
// server stops; documents whose folder changed move to their new server), settings changed
// (only the servers whose scope they touch hear of it; the interpreter setting restarts), and
// the Python extension's interpreter changed (restarts after a pause in a burst, per folder,
// only the servers whose interpreter it changes).

import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { DEFAULT_PYTHON, fake, Uri, type WorkspaceFolder } from './fakes/vscode';
import { harness, settle, type Harness } from './routingHarness';

/** How long the client waits for a burst of interpreter changes to end (languageClient.ts). */
const DEBOUNCE_MS = 1000;

describe('folders added and removed', () => {
  let h: Harness;
  beforeEach(() => fake.reset());
  afterEach(() => h.dispose());

  it("a removed folder stops its server and its output; its open files go to the default server", async () => {
    const [, beta] = fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    h = await harness();
    fake.open(Uri.file('/ws/alpha/a.py'));
    const b = fake.open(Uri.file('/ws/beta/b.py'));
    await settle();
    const betaLog = h.client.serverFor(b.uri).log;
    h.clear();
    fake.removeFolder(beta);
    await settle();
    assert.deepEqual(h.on('dispose'), ['beta']);
    assert.deepEqual(h.on('start'), ['no folder']);
    assert.deepEqual(h.client.all().map((s) => s.label), ['alpha', 'no folder']);
    assert.equal(h.client.serverFor(b.uri).label, 'no folder');
    assert.ok(betaLog !== h.client.log && (betaLog as unknown as { disposed: boolean }).disposed, "beta's output channel stays open");
  });

  it("an inner folder removed: its files move to the outer folder's server", async () => {
    const [, inner] = fake.setFolders(Uri.file('/ws'), Uri.file('/ws/inner'));
    h = await harness();
    const doc = fake.open(Uri.file('/ws/inner/model.py'));
    await settle();
    assert.deepEqual(h.on('start'), ['inner']);
    h.clear();
    fake.removeFolder(inner);
    await settle();
    assert.deepEqual(h.on('dispose'), ['inner']);
    assert.deepEqual(h.on('start'), ['ws']);
    assert.equal(h.client.serverFor(doc.uri).label, 'ws');
    assert.deepEqual(h.on('restart'), [], 'no server held the file any more: nothing to restart');
  });

  it('a folder added inside another: the outer server lets go of its files (restart), the new one starts', async () => {
    fake.setFolders(Uri.file('/ws'));
    h = await harness();
    const moved = fake.open(Uri.file('/ws/pkg/model.py'));
    fake.open(Uri.file('/ws/top.py'));
    await settle();
    assert.deepEqual(h.on('start'), ['ws']);
    h.clear();
    fake.addFolder(Uri.file('/ws/pkg'));
    await settle();
    assert.deepEqual(h.on('restart'), ['ws']);
    assert.deepEqual(h.on('start'), ['pkg']);
    assert.equal(h.client.serverFor(moved.uri).label, 'pkg');
  });

  it('a closed file moves nothing when folders change', async () => {
    fake.setFolders(Uri.file('/ws'));
    h = await harness();
    const doc = fake.open(Uri.file('/ws/pkg/model.py'));
    await settle();
    fake.close(doc);
    h.clear();
    fake.addFolder(Uri.file('/ws/pkg'));
    await settle();
    assert.deepEqual(h.on('restart'), []);
    assert.deepEqual(h.on('start'), []);
  });
});

describe('settings changed', () => {
  let h: Harness;
  let alpha: WorkspaceFolder;
  let beta: WorkspaceFolder;
  beforeEach(async () => {
    fake.reset();
    [alpha, beta] = fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/beta'));
    h = await harness();
    fake.open(Uri.file('/ws/alpha/a.py'));
    fake.open(Uri.file('/ws/beta/b.py'));
    fake.open(Uri.file('/elsewhere/solo.py')); // the default server too
    await settle();
    h.clear();
  });
  afterEach(() => h.dispose());

  it("folder A's own settings: only A's server hears of it, never the default server", () => {
    fake.configure(alpha, { 'torchMlirLens.lensTargets': ['stablehlo'] });
    assert.deepEqual(h.on('settingsChanged'), ['alpha']);
    assert.deepEqual(h.on('restart'), []);
  });

  it("folder A's interpreter setting restarts A's server only", async () => {
    fake.configure(beta, { 'torchMlirLens.python': '/venvs/b/bin/python' });
    await settle();
    assert.deepEqual(h.on('restart'), ['beta']);
    assert.deepEqual(h.on('settingsChanged'), [], 'a restart reads every setting: no notification besides');
  });

  it("the workspace's settings reach every server, the default one included", async () => {
    fake.configure(undefined, { 'torchMlirLens.defaultTarget': 'tosa' });
    assert.deepEqual(h.on('settingsChanged').sort(), ['alpha', 'beta', 'no folder']);
    fake.configure(undefined, { 'torchMlirLens.python': '/usr/bin/python3.11' });
    await settle();
    assert.deepEqual(h.on('restart').sort(), ['alpha', 'beta', 'no folder']);
  });

  it("other extensions' settings change nothing", () => {
    fake.configure(alpha, { 'editor.fontSize': 15, 'python.defaultInterpreterPath': '/x' });
    fake.configure(undefined, { 'torchMlirLensExtra.x': 1 });
    assert.equal(h.calls.length, 0);
  });
});

describe("the Python extension's interpreter changed", () => {
  let h: Harness;
  let alpha: WorkspaceFolder;
  let gamma: WorkspaceFolder;
  let delta: WorkspaceFolder;
  beforeEach(async () => {
    fake.reset();
    fake.installPythonExtension();
    [alpha, gamma, delta] = fake.setFolders(Uri.file('/ws/alpha'), Uri.file('/ws/gamma'), Uri.file('/ws/delta'));
    fake.preset(alpha, { 'torchMlirLens.python': '/venvs/alpha/bin/python' }); // the setting wins over the extension
    h = await harness();
    for (const f of ['alpha', 'gamma', 'delta']) fake.open(Uri.file(`/ws/${f}/model.py`));
    fake.open(Uri.file('/elsewhere/solo.py'));
    await settle();
    h.clear();
    mock.timers.enable({ apis: ['setTimeout'] });
  });
  afterEach(() => {
    mock.timers.reset();
    h.dispose();
  });

  const interpreterOf = (folder: string) => h.client.all().find((s) => s.label === folder)?.interpreter?.path;

  it('a burst of changes for a folder restarts its server once, after the burst, with the last interpreter', async () => {
    assert.equal(interpreterOf('gamma'), DEFAULT_PYTHON);
    for (const p of ['/venvs/g1/bin/python', '/venvs/g2/bin/python', '/venvs/g3/bin/python']) {
      fake.selectInterpreter(gamma, p);
      mock.timers.tick(DEBOUNCE_MS / 2);
      await settle();
    }
    assert.deepEqual(h.on('restart'), [], 'restarted during the burst');
    mock.timers.tick(DEBOUNCE_MS / 2);
    await settle();
    assert.deepEqual(h.calls.map((c) => [c.server, c.method]), [['gamma', 'restart']]);
    assert.equal(interpreterOf('gamma'), '/venvs/g3/bin/python');
  });

  it('each folder waits for its own burst to end', async () => {
    fake.selectInterpreter(gamma, '/venvs/g/bin/python');
    mock.timers.tick(DEBOUNCE_MS * 0.6);
    fake.selectInterpreter(delta, '/venvs/d/bin/python');
    mock.timers.tick(DEBOUNCE_MS * 0.4);
    await settle();
    assert.deepEqual(h.on('restart'), ['gamma']);
    mock.timers.tick(DEBOUNCE_MS * 0.6);
    await settle();
    assert.deepEqual(h.on('restart'), ['gamma', 'delta']);
  });

  it('a folder whose setting names the interpreter keeps its server', async () => {
    fake.selectInterpreter(alpha, '/venvs/other/bin/python');
    mock.timers.tick(DEBOUNCE_MS);
    await settle();
    assert.deepEqual(h.on('restart'), []);
    assert.equal(interpreterOf('alpha'), '/venvs/alpha/bin/python');
  });

  it("a change for the whole workspace restarts the servers it changes: not alpha's (its setting), nor a same interpreter", async () => {
    fake.selectInterpreter(delta, '/venvs/d/bin/python'); // delta has its own choice, kept
    mock.timers.tick(DEBOUNCE_MS);
    await settle();
    h.clear();
    fake.selectInterpreter(undefined, '/venvs/all/bin/python');
    mock.timers.tick(DEBOUNCE_MS);
    await settle();
    assert.deepEqual(h.on('restart').sort(), ['gamma', 'no folder']);
  });

  it("a folder removed while a change waits: its stopped server is not restarted", async () => {
    fake.selectInterpreter(undefined, '/venvs/all/bin/python'); // gamma's, delta's and the default's
    fake.removeFolder(gamma);
    await settle();
    mock.timers.tick(DEBOUNCE_MS);
    await settle();
    assert.deepEqual(h.on('dispose'), ['gamma']);
    assert.deepEqual(h.on('restart').sort(), ['delta', 'no folder']);
  });
});

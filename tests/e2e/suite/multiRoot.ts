// The three-folder workspace (alpha: the project's interpreter from `torchMlirLens.python` and
// its own lens targets; beta: a bare interpreter; gamma: another venv, from the Python extension,
// TOSA only) plus a file outside them: one server per folder and a default one, each with its
// own interpreter and settings. Then the Python extension's interpreter changes (through the
// test-only stand-in of its API, fake-python-extension/): a burst of changes for gamma restarts
// gamma's server once, with the new interpreter, and no other server; a change for alpha loses
// to alpha's setting. Removing a folder stops its server.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { TestReport } from '../../../client/src/testHooks';
import { baseDir, extensionApi, lensTitles, Steps, untilDriverDone, waitFor } from './common';

type ServerReport = TestReport['servers'][number];

/** The interpreters the driver made (driver.mjs, makeWorkspaces). */
interface Interpreters {
  project: string;
  bare: string;
  gamma: string;
  gammaNext: string;
}

/** The executable a process was started with (argv[0]): which interpreter runs a server. */
function commandOf(pid: number): string {
  return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
}

export async function runMultiRoot(): Promise<void> {
  const steps = new Steps('multiRoot');
  // VS Code in the browser reads a remote .code-workspace file only once its remote file system
  // is up: until then the window has no folders, and they arrive as a folder change. Shorter
  // than the driver's 30 s check (driver.mjs, openWindow): a window it discards and opens again
  // has given up by then, so it never runs its steps beside the new window's.
  const named = (name: string) => vscode.workspace.workspaceFolders?.find((f) => f.name === name);
  const started = Date.now();
  const [alpha, beta, gamma] = await waitFor(
    'the workspace folders alpha, beta and gamma',
    20_000,
    async () => {
      const found = ['alpha', 'beta', 'gamma'].map(named);
      return found.every((f) => f) ? (found as vscode.WorkspaceFolder[]) : undefined;
    },
    () => `folders [${(vscode.workspace.workspaceFolders ?? []).map((f) => f.name).join(', ')}]`,
  );
  const foldersAfter = Date.now() - started;
  await steps.run('workspaceFolders', async () => `alpha, beta and gamma there ${foldersAfter} ms after the suite started`);
  const interpreters = JSON.parse(fs.readFileSync(path.join(baseDir(), 'interpreters.json'), 'utf8')) as Interpreters;
  const serverInfo = (uri: vscode.Uri) =>
    api.client.request<{ pid: number; settings: { lensTargets: string[]; defaultTarget: string } }>('torchMlirLens/serverInfo', {
      uri: uri.toString(),
      waitForWorker: false,
    });
  const alphaDoc = vscode.Uri.joinPath(alpha.uri, 'alpha_model.py');
  const gammaDoc = vscode.Uri.joinPath(gamma.uri, 'gamma_model.py');
  const api = await extensionApi();
  const venvPython = process.env.TML_E2E_PYTHON ?? '';
  const barePython = fs.readFileSync(path.join(beta.uri.fsPath, '.vscode', 'settings.json'), 'utf8');

  await steps.run('alphaOwnSettings', async () => {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(alpha.uri, 'alpha_model.py'));
    const titles = await waitFor("alpha's lenses", 150_000, async () => {
      const t = await lensTitles(doc.uri);
      return t.includes('Show StableHLO IR') ? t : undefined;
    });
    if (titles.includes('Show TOSA IR')) throw new Error(`alpha's lensTargets exclude TOSA, got ${titles.join(' | ')}`);
    const s = api.client.serverFor(doc.uri);
    if (s.folder?.name !== 'alpha' || s.interpreter?.path !== venvPython || s.interpreter.source !== 'setting') {
      throw new Error(`alpha's server: folder ${s.folder?.name}, interpreter ${s.interpreter?.path}, want ${venvPython}`);
    }
    return `alpha: ${titles.join(' | ')} (interpreter ${s.interpreter.path} from ${s.interpreter.source})`;
  });

  await steps.run('betaMissingServer', async () => {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(beta.uri, 'beta_model.py'));
    const s = api.client.serverFor(doc.uri);
    await waitFor("beta's server to be found missing", 60_000, async () => (s.state === 'missing' ? true : undefined));
    if (!s.interpreter || !barePython.includes(s.interpreter.path)) throw new Error(`beta's interpreter ${s.interpreter?.path}`);
    const lowered = await api.client.request('torchMlirLens/modules', { uri: doc.uri.toString() }).then(
      () => 'answered',
      (e) => String(e),
    );
    if (lowered === 'answered') throw new Error("a request for beta's file was answered by another folder's server");
    return `beta: ${s.detail} | its request: ${lowered.slice(0, 160)}`;
  });

  await steps.run('outsideDefaultServer', async () => {
    // A file outside both folders: the default server, with the window's settings.
    const outside = vscode.Uri.file(path.join(path.dirname(alpha.uri.fsPath), 'outside', 'solo.py'));
    const doc = await vscode.workspace.openTextDocument(outside);
    const titles = await waitFor('lenses on the file outside the folders', 150_000, async () => {
      const t = await lensTitles(doc.uri);
      return t.includes('Show Linalg IR') ? t : undefined;
    });
    if (!titles.includes('Show TOSA IR') || titles.includes('Show StableHLO IR')) throw new Error(`default lens targets expected, got ${titles.join(' | ')}`);
    const s = api.client.serverFor(doc.uri);
    if (s.folder || !s.running) throw new Error(`outside file served by ${s.label} (running ${s.running})`);
    const ir = await api.client.request<{ ir: string }>('torchMlirLens/lower', { uri: doc.uri.toString(), module: 'MLP', target: 'linalg' });
    if (!ir.ir.includes('linalg.')) throw new Error(`no linalg IR: ${ir.ir.slice(0, 200)}`);
    return `default server (${s.interpreter?.path}): ${titles.join(' | ')}; lowered MLP`;
  });

  await steps.run('gammaOwnInterpreter', async () => {
    // gamma has no torchMlirLens.python: the Python extension's interpreter for gamma runs its
    // server, with gamma's settings; alpha's server runs alpha's.
    const doc = await vscode.workspace.openTextDocument(gammaDoc);
    const titles = await waitFor("gamma's lenses", 150_000, async () => {
      const t = await lensTitles(doc.uri);
      return t.includes('Show TOSA IR') ? t : undefined;
    });
    if (titles.some((t) => /Show (Linalg|StableHLO) IR/.test(t))) throw new Error(`gamma's lensTargets are TOSA only, got ${titles.join(' | ')}`);
    const s = api.client.serverFor(doc.uri);
    if (s.interpreter?.path !== interpreters.gamma || s.interpreter.source !== 'python-extension') {
      throw new Error(`gamma's interpreter ${s.interpreter?.path} from ${s.interpreter?.source}, want ${interpreters.gamma} from the Python extension`);
    }
    const g = await serverInfo(gammaDoc);
    const a = await serverInfo(alphaDoc);
    if (commandOf(g.pid) !== interpreters.gamma) throw new Error(`gamma's server runs ${commandOf(g.pid)}`);
    if (commandOf(a.pid) !== interpreters.project) throw new Error(`alpha's server runs ${commandOf(a.pid)}`);
    if (g.settings.defaultTarget !== 'tosa' || a.settings.defaultTarget !== 'linalg') {
      throw new Error(`default targets: gamma ${g.settings.defaultTarget}, alpha ${a.settings.defaultTarget}`);
    }
    return `gamma: pid ${g.pid} runs ${commandOf(g.pid)} (${g.settings.lensTargets}); alpha: pid ${a.pid} runs ${commandOf(a.pid)} (${a.settings.lensTargets})`;
  });

  await untilDriverDone('ui-done-multiRoot').catch(() => undefined);

  // Before and after the interpreter changes: each server's report, and alpha's and gamma's pids.
  const byFolder = (r: TestReport) => new Map(r.servers.map((s) => [s.folder ?? '(none)', s] as [string, ServerReport]));
  let before = new Map<string, ServerReport>();
  const pids = { alpha: 0, gamma: 0 };

  await steps.run('interpreterChange', async () => {
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(gammaDoc)); // the status bar shows gamma
    pids.alpha = (await serverInfo(alphaDoc)).pid;
    pids.gamma = (await serverInfo(gammaDoc)).pid;
    before = byFolder(await api.report());
    // Alpha first (its setting must win), then a burst for gamma, as a discovery or a
    // selection does: each a moment apart, well within the client's 1 s debounce.
    const burst: [vscode.WorkspaceFolder, string][] = [
      [alpha, interpreters.bare],
      [gamma, interpreters.bare],
      [gamma, interpreters.project],
      [gamma, interpreters.gammaNext],
    ];
    for (const [folder, python] of burst) {
      await vscode.commands.executeCommand('fakePython.setInterpreter', folder.uri.toString(), python);
      await new Promise((r) => setTimeout(r, 150)); // the pace of the burst (input), not a wait for a result
    }
    const g = await waitFor("gamma's server restarted with the new interpreter", 120_000, async () => {
      const r = byFolder(await api.report()).get('gamma');
      return r?.interpreter === interpreters.gammaNext && r.running ? r : undefined;
    });
    const status = await waitFor('the status bar naming the new interpreter', 30_000, async () => {
      const r = await api.report();
      return r.status.text.includes('(gamma)') && r.status.tooltip.includes(`Interpreter: ${interpreters.gammaNext}`) ? r.status : undefined;
    });
    // The restarted server runs the new interpreter, with gamma's settings, and lowers.
    const info = await serverInfo(gammaDoc);
    if (info.pid === pids.gamma || commandOf(info.pid) !== interpreters.gammaNext) {
      throw new Error(`gamma's server: pid ${pids.gamma} → ${info.pid}, running ${commandOf(info.pid)}`);
    }
    const ir = await api.client.request<{ ir: string }>('torchMlirLens/lower', { uri: gammaDoc.toString(), module: 'MLP', target: 'tosa' });
    if (!ir.ir.includes('tosa.')) throw new Error(`no TOSA IR after the restart: ${ir.ir.slice(0, 200)}`);
    const after = byFolder(await api.report());
    // One restart for the whole burst; the other servers never restarted.
    const starts = (m: Map<string, ServerReport>, f: string) => m.get(f)?.starts ?? -1;
    if (starts(after, 'gamma') !== starts(before, 'gamma') + 1) {
      throw new Error(`gamma started ${starts(after, 'gamma') - starts(before, 'gamma')} times for one burst of changes (want 1)`);
    }
    const restarted = ['alpha', 'beta', '(none)'].filter((f) => !before.has(f) || starts(after, f) !== starts(before, f));
    if (restarted.length) {
      throw new Error(`other servers restarted: ${restarted.map((f) => `${f} starts ${starts(before, f)} → ${starts(after, f)}`).join(', ')}`);
    }
    const alphaPid = (await serverInfo(alphaDoc)).pid;
    if (alphaPid !== pids.alpha) throw new Error(`alpha's server pid changed ${pids.alpha} → ${alphaPid}`);
    return `gamma: ${interpreters.gamma} → ${g.interpreter} (one restart, pid ${pids.gamma} → ${info.pid}, lowers TOSA); status "${status.text}"; alpha, beta, default: not restarted`;
  });

  await steps.run('settingWins', async () => {
    // The Python extension now says "bare venv" for alpha (changed before gamma's burst, so its
    // debounce ran out first); alpha's torchMlirLens.python wins: same interpreter, no restart.
    const python = vscode.extensions.getExtension<{ environments: { getActiveEnvironmentPath(r: vscode.Uri): { path: string } } }>('ms-python.python');
    const said = python?.exports.environments.getActiveEnvironmentPath(alpha.uri).path;
    if (said !== interpreters.bare) throw new Error(`the Python extension says ${said} for alpha`);
    const a = byFolder(await api.report()).get('alpha');
    if (a?.interpreter !== interpreters.project || a.source !== 'setting' || !a.running || a.starts !== before.get('alpha')?.starts) {
      throw new Error(`alpha: ${JSON.stringify(a)}, starts before the change ${before.get('alpha')?.starts}`);
    }
    return `alpha keeps ${a.interpreter} (setting, not restarted) while the Python extension says ${said}`;
  });

  await steps.run('folderRemoved', async () => {
    const betaKey = beta.uri.toString();
    if (!api.client.all().some((s) => s.key === betaKey)) throw new Error("beta's server never existed");
    const startsBefore = byFolder(await api.report());
    // beta's `torchMlirLens.python` goes with it: a configuration change. Ours is heard after
    // the client's (listeners run in order), so once it fired the client has reacted to it.
    let settingGone = false;
    const listener = vscode.workspace.onDidChangeConfiguration((e) => {
      settingGone ||= e.affectsConfiguration('torchMlirLens.python');
    });
    try {
      if (!vscode.workspace.updateWorkspaceFolders(1, 1)) throw new Error('could not remove beta');
      await waitFor("beta's server to go", 30_000, async () => (api.client.all().some((s) => s.key === betaKey) ? undefined : true));
      await waitFor("the change of beta's settings", 30_000, async () => (settingGone ? true : undefined));
    } finally {
      listener.dispose();
    }
    for (const name of ['alpha', 'gamma']) {
      if (!api.client.all().find((s) => s.folder?.name === name)?.running) throw new Error(`${name}'s server stopped too`);
    }
    // A folder's own setting leaving is not the other servers' business: none restarts.
    const after = byFolder(await api.report());
    const restarted = ['alpha', 'gamma', '(none)'].filter((f) => after.get(f)?.starts !== startsBefore.get(f)?.starts);
    if (restarted.length) {
      throw new Error(`removing beta restarted: ${restarted.map((f) => `${f} ${startsBefore.get(f)?.starts} → ${after.get(f)?.starts}`).join(', ')}`);
    }
    return `servers left: ${api.client.all().map((s) => s.label).join(', ')}`;
  });
  steps.check();
}

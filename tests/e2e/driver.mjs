// End-to-end test of the packaged extension in a real VS Code (code-server) driven by headless
// Chromium, against the real language server.
//
//   node tests/e2e/driver.mjs            (after `bash tests/e2e/setup.sh` and `npm run package`)
//   env: TML_PYTHON      interpreter with the server (default: <repo>/.venv/bin/python)
//        TML_E2E_CACHE   setup.sh's cache folder (default: <repo>/.cache/vscode-e2e)
//        TML_E2E_KEEP=1  keep the temporary folder for inspection
//        TML_E2E_ONLY=main|multiRoot|notebook|onnx|trust  run one window (development)
//
// One code-server (trust off) serves four windows in turn:
//   main       a single folder: lenses, the Linalg pane, the highlight the cursor draws in it,
//              hovers, colour bands, a squiggle with its message, the export dialog, the graph
//              view (a clicked node reveals its line, the cursor lights its node), the pane's
//              ONNX path beside it. Its
//              in-editor suite (suite/main.ts) checks through the API meanwhile, then a pane
//              refreshed on save and trust granted mid-start many times (suite/trustRace.ts).
//   multiRoot  three folders with their own interpreters and settings (alpha: the project's
//              venv from `torchMlirLens.python`; beta: a bare venv, "server missing"; gamma: a
//              second venv that can import the project's packages, chosen through the Python
//              extension's API) and a file outside them (suite/multiRoot.ts). The in-host suite
//              then changes interpreters through that API: only gamma's server restarts, once
//              for a burst of changes, and alpha's setting wins over the extension.
//   onnx       an .onnx file in its custom editor (each node's verdict per backend, the Linalg
//              pane linked to the node rows both ways, the rejected node in Problems, the
//              graph view of the model: a clicked node lights its row), and IREE
//              CPU diagnosed on the MLP: its verdict lens, a hover naming its dispatch, the heat
//              band of "Time on IREE CPU".
//   notebook   tests/notebooks/spread_model.ipynb (no kernel), its model spread over cells: the
//              lens in the model's cell, the Linalg pane, the cursor in a cell lighting up its IR,
//              a hover and a squiggle in the helper block's cell, Ctrl-click revealing a cell;
//              its suite (suite/notebook.ts) checks lenses, hover, diagnostics and the pane's
//              definitions through the API. Its training cell must never run (a marker file).
// The Python extension itself cannot be installed offline: fake-python-extension/ is a
// test-only stand-in (id ms-python.python) implementing the part of its published API the
// client uses; it is packaged and installed beside the .vsix.
// A second code-server (trust on) serves the trust window: restricted until trusted, IR after
// trusting without a reload.
// A case is one function in cases.mjs; add it to a window's list below. Every wait has a
// time-out (no fixed sleeps); screenshots and logs go to test-artifacts/e2e/, the result to
// test-artifacts/e2e/result.json; exit code 0 when all pass.

import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import * as cases from './cases.mjs';
import {
  ARTIFACTS, CACHE, CHROMIUM, CODE_SERVER, N24, PYTHON, ROOT, SUITE, VSIX,
  cleanups, elapsedSeconds, explorerItem, log, need, result, startCodeServer, ui, until,
} from './workbench.mjs';

const TOTAL_BUDGET_MS = 600_000;
const NOTEBOOK = path.join(ROOT, 'tests', 'notebooks', 'spread_model.ipynb');
const SUITE_BUDGET_MS = 300_000;

/** The windows: where they open, their cases in order, and whether an in-editor suite runs. */
const WINDOWS = {
  main: { target: (ws) => ({ folder: ws.single }), suite: 'main', cases: ['lenses', 'pane', 'highlight', 'hover', 'bands', 'squiggle', 'exportDialog', 'graph', 'viaOnnx'] },
  multiRoot: {
    target: (ws) => ({ workspace: ws.multiRoot }),
    folders: ['alpha', 'beta', 'gamma'],
    suite: 'multiRoot',
    cases: ['alphaFolder', 'betaMissing', 'alphaUnaffected', 'gammaFolder'],
  },
  notebook: { target: (ws) => ({ folder: ws.notebook }), suite: 'notebook', cases: ['nbOpen', 'nbLens', 'nbPane', 'nbHighlight', 'nbHover', 'nbSquiggle', 'nbReveal'] },
  trust: { target: (ws) => ({ folder: ws.single }), suite: null, cases: ['untrusted', 'trusted'] },
  onnx: { target: (ws) => ({ folder: ws.onnx }), suite: null, cases: ['ireeLens', 'onnxEditor', 'onnxPane', 'onnxProblems', 'onnxGraph'] },
};

/** How many times a workspace window is opened before its cases run anyway. */
const WORKSPACE_ATTEMPTS = 3;

/**
 * Opens a window. A workspace window must show its folders: VS Code in the browser reads a
 * remote .code-workspace file once, at start-up, and when that read fails (now and then, while
 * the remote file system comes up) the window stays without folders for good, the explorer
 * saying "No Folder Opened". Nothing was tested yet then, so it is opened again, in a fresh
 * browser profile, and said so in the log and the result. (Its in-host suite has given up by
 * then: it waits 20 s for the folders.)
 */
async function openWindow(server, name, ctx) {
  const spec = WINDOWS[name];
  for (let attempt = 1; ; attempt++) {
    const win = await server.open({ window: name, ...spec.target(ctx.ws), suite: !!spec.suite, attempt });
    if (!spec.folders || attempt === WORKSPACE_ATTEMPTS) return win; // the last try goes on: its cases say what fails
    const listed = (folder) => explorerItem(win.page, folder).count();
    const hasFolders = await until(`the explorer to list ${spec.folders.join(', ')}`, 30_000, async () =>
      (await Promise.all(spec.folders.map(listed))).every((n) => n > 0),
    ).then(() => true, () => false);
    if (hasFolders) return win;
    log(`[${name}] the window opened its workspace without its folders (VS Code could not read the .code-workspace file): opening it again`);
    result.reopened[name] = (result.reopened[name] ?? 0) + 1;
    await win.closeWindow();
  }
}

/** Runs a window's cases; with a suite, waits for it (it waits for ui-done-<suite> first). */
async function runWindow(server, name, ctx) {
  const spec = WINDOWS[name];
  const win = await openWindow(server, name, ctx);
  const w = { page: win.page, tmp: ctx.tmp, ws: spec.target(ctx.ws).folder ?? ctx.ws.single, ...ui(win.page, name, win.reportFile) };
  try {
    for (const c of spec.cases) await w.step(c, () => cases[c](w));
  } finally {
    if (spec.suite) {
      fs.writeFileSync(path.join(ctx.tmp, `ui-done-${spec.suite}`), 'done'); // lets the in-host suite finish
      const exit = await Promise.race([win.suiteDone, new Promise((r) => setTimeout(() => r('timeout'), SUITE_BUDGET_MS))]);
      result.suiteExit[spec.suite] = exit;
      const file = path.join(ctx.tmp, `suite-result-${spec.suite}.json`);
      result.suites[spec.suite] = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
      log(`in-host suite ${spec.suite}: exit code ${exit}`);
      for (const [step, r] of Object.entries(result.suites[spec.suite] ?? {})) {
        if (!r.ok) log(`  in-host FAIL ${spec.suite}.${step} after ${r.ms} ms: ${r.detail.slice(0, 600)}`);
      }
    }
    const failed = Object.entries(result.steps).some(([k, r]) => k.startsWith(`${name}.`) && !r.ok) || (spec.suite && result.suiteExit[spec.suite] !== 0);
    if (failed) {
      logTails(win.userData);
      // code-server's and the window's own account of its extension host (started, exited, crashed).
      const server = path.basename(win.userData).replace(/^ud-/, '');
      logMatching(`code-server-${server}.log`, /ExtensionHost|exited/i);
      logMatching(`browser-console-${server}-${name}.log`, /extension host|\[error\]/i);
    }
    await win.closeWindow();
  }
}

/** Prints the last `count` of `lines` under a heading that says how many there were. */
function logLast(what, lines, count) {
  log(`  ${what}, last ${Math.min(count, lines.length)} of ${lines.length} lines:`);
  for (const line of lines.slice(-count)) console.log(`    ${line.slice(0, 240)}`);
}

/** The last lines of an artifact log that match `pattern`. */
function logMatching(file, pattern, count = 8) {
  const full = path.join(ARTIFACTS, file);
  const lines = fs.existsSync(full) ? fs.readFileSync(full, 'utf8').split('\n').filter((l) => pattern.test(l)) : [];
  logLast(`${file} (matching ${pattern})`, lines, count);
}

/** The last lines of the extension's logs of the newest window (its servers' and its own). */
function logTails(ud) {
  const logs = path.join(ud, 'logs');
  const sessions = fs.existsSync(logs) ? fs.readdirSync(logs).sort() : [];
  const session = sessions.length ? path.join(logs, sessions.at(-1)) : undefined;
  const hosts = session ? fs.readdirSync(session).filter((d) => d.startsWith('exthost')).sort((a, b) => Number(a.slice(7)) - Number(b.slice(7))) : [];
  if (!hosts.length) return log('  no extension host logs');
  const dir = path.join(session, hosts.at(-1), 'torch-mlir-lens.torch-mlir-lens');
  for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    logLast(`${f} (${hosts.at(-1)})`, fs.readFileSync(path.join(dir, f), 'utf8').trimEnd().split('\n'), 12);
  }
}

const purelib = (python) =>
  execFileSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], { encoding: 'utf8', timeout: 60_000 }).trim();

/**
 * A second working interpreter, cheaply: a venv of its own (its own sys.prefix and executable)
 * whose site-packages reads the project venv's (torch, torch-mlir, torch_mlir_lens) through a
 * .pth file. Returns its python.
 */
function linkedVenv(dir) {
  execFileSync(PYTHON, ['-m', 'venv', '--without-pip', dir], { timeout: 60_000 });
  const python = path.join(dir, 'bin', 'python');
  // addsitedir (not a plain path line) also runs the project venv's own .pth files (the editable install).
  fs.writeFileSync(path.join(purelib(python), 'project-venv.pth'), `import site; site.addsitedir(${JSON.stringify(purelib(PYTHON))})\n`);
  return python;
}

/**
 * Workspaces: a single folder; three folders (alpha, beta, gamma) with their own interpreters
 * and settings; a file outside them. Writes the interpreters to <tmp>/interpreters.json for the
 * in-host suite.
 */
function makeWorkspaces(tmp) {
  const single = path.join(tmp, 'ws');
  fs.mkdirSync(path.join(single, '.vscode'), { recursive: true });
  for (const f of ['mlp.py', 'unsupported_ops.py']) fs.copyFileSync(path.join(ROOT, 'examples', f), path.join(single, f));
  fs.writeFileSync(path.join(single, '.vscode', 'settings.json'), JSON.stringify({ 'torchMlirLens.python': PYTHON }, null, 2));

  // An interpreter without the server: a venv with nothing installed, from the same base Python.
  const bare = path.join(tmp, 'bare-venv');
  execFileSync(PYTHON, ['-m', 'venv', '--without-pip', bare], { timeout: 60_000 });
  const interpreters = {
    project: PYTHON,
    bare: path.join(bare, 'bin', 'python'),
    gamma: linkedVenv(path.join(tmp, 'gamma-venv')), // what the Python extension reports for gamma
    gammaNext: linkedVenv(path.join(tmp, 'gamma-next-venv')), // the one the suite switches gamma to
  };
  fs.writeFileSync(path.join(tmp, 'interpreters.json'), JSON.stringify(interpreters, null, 2));
  const mr = path.join(tmp, 'mr');
  const folders = {
    alpha: { 'torchMlirLens.python': PYTHON, 'torchMlirLens.lensTargets': ['linalg', 'stablehlo'] },
    beta: { 'torchMlirLens.python': interpreters.bare },
    // No torchMlirLens.python: the interpreter comes from the Python extension (its setting).
    gamma: {
      'python.defaultInterpreterPath': interpreters.gamma,
      'torchMlirLens.lensTargets': ['tosa'],
      'torchMlirLens.defaultTarget': 'tosa',
    },
  };
  for (const [name, settings] of Object.entries(folders)) {
    fs.mkdirSync(path.join(mr, name, '.vscode'), { recursive: true });
    fs.writeFileSync(path.join(mr, name, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2));
    fs.copyFileSync(path.join(ROOT, 'examples', 'mlp.py'), path.join(mr, name, `${name}_model.py`));
  }
  fs.mkdirSync(path.join(mr, 'outside'));
  fs.copyFileSync(path.join(ROOT, 'examples', 'mlp.py'), path.join(mr, 'outside', 'solo.py'));
  const multiRoot = path.join(mr, 'two.code-workspace');
  // Files outside every folder: the Python extension's workspace-wide interpreter.
  const settings = { 'python.defaultInterpreterPath': PYTHON };
  fs.writeFileSync(multiRoot, JSON.stringify({ folders: Object.keys(folders).map((f) => ({ path: f })), settings }, null, 2));

  // A notebook with its model spread over cells; its last cell (training) must never run.
  const notebook = path.join(tmp, 'nb');
  fs.mkdirSync(path.join(notebook, '.vscode'), { recursive: true });
  fs.copyFileSync(NOTEBOOK, path.join(notebook, path.basename(NOTEBOOK)));
  fs.writeFileSync(path.join(notebook, '.vscode', 'settings.json'), JSON.stringify({
    'torchMlirLens.python': PYTHON,
    // An op's definitions are its line and the lines calling it: go to the first (innermost).
    'editor.gotoLocation.multipleDefinitions': 'goto',
  }, null, 2));
  // An ONNX model (x → Relu → com.microsoft FastGelu, which no backend lowers → Relu) beside
  // the MLP, IREE CPU diagnosed: the model's view and Problems; IREE's lens, hover and heat band.
  const onnx = path.join(tmp, 'onnx');
  fs.mkdirSync(path.join(onnx, '.vscode'), { recursive: true });
  execFileSync(PYTHON, ['-c', `from pathlib import Path; from tests.worker.models import onnx_models as m; m.chain(Path(${JSON.stringify(onnx)}), 'FastGelu', domain='com.microsoft')`], { cwd: ROOT, timeout: 120_000 });
  fs.copyFileSync(path.join(ROOT, 'examples', 'mlp.py'), path.join(onnx, 'mlp.py'));
  fs.writeFileSync(path.join(onnx, '.vscode', 'settings.json'), JSON.stringify({
    'torchMlirLens.python': PYTHON,
    'torchMlirLens.diagnosticTargets': ['linalg', 'tosa', 'stablehlo', 'iree-cpu'],
  }, null, 2));
  return { single, multiRoot, notebook, onnx };
}

/** Packages the test-only Python extension stand-in (fake-python-extension/) into <tmp>. */
function packageFakePython(tmp) {
  const out = path.join(tmp, 'fake-python-extension.vsix');
  execFileSync(path.join(ROOT, 'node_modules', '.bin', 'vsce'), ['package', '--no-dependencies', '--skip-license', '--allow-missing-repository', '-o', out], {
    cwd: path.join(ROOT, 'tests', 'e2e', 'fake-python-extension'),
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  return out;
}

async function main() {
  need(CODE_SERVER, 'run `bash tests/e2e/setup.sh`');
  need(N24, 'run `bash tests/e2e/setup.sh`');
  need(VSIX, 'run `npm run package`');
  need(SUITE, 'run `npm run build`');
  need(PYTHON, 'set TML_PYTHON to an interpreter with torch_mlir_lens (make venv)');
  need(CHROMIUM, 'run `bash tests/e2e/setup.sh` (apt chromium)');
  const require = createRequire(path.join(CACHE, 'pw', 'node_modules', 'x.js'));
  const { chromium } = require('playwright-core');

  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tml-e2e-'));
  const exts = path.join(tmp, 'exts');
  const only = process.env.TML_E2E_ONLY;
  const wanted = (name) => !only || only === name;
  try {
    const ws = makeWorkspaces(tmp);
    const fakePython = packageFakePython(tmp);
    log('installing', path.basename(VSIX), 'and the Python extension stand-in');
    const install = [VSIX, fakePython].flatMap((v) => ['--install-extension', v]);
    execFileSync(CODE_SERVER, ['--user-data-dir', path.join(tmp, 'ud-install'), '--extensions-dir', exts, ...install], {
      env: { ...process.env, PATH: `${N24}${path.delimiter}${process.env.PATH}`, XDG_DATA_HOME: path.join(tmp, 'xdg', 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    const ctx = { tmp, ws };
    if (wanted('main') || wanted('multiRoot') || wanted('notebook') || wanted('onnx')) {
      // No machine-wide interpreter: the single folder sets its own, gamma takes the Python extension's.
      const server = await startCodeServer({ name: 'shared', tmp, exts, trust: false, python: null, chromium });
      try {
        if (wanted('main')) await runWindow(server, 'main', ctx).catch((e) => log('main window:', String(e).split('\n')[0]));
        if (wanted('multiRoot')) await runWindow(server, 'multiRoot', ctx).catch((e) => log('multiRoot window:', String(e).split('\n')[0]));
        if (wanted('notebook')) {
          await runWindow(server, 'notebook', ctx).catch((e) => log('notebook window:', String(e).split('\n')[0]));
          result.trainingRan = fs.existsSync(path.join(ws.notebook, 'training-ran.marker'));
        }
        if (wanted('onnx')) await runWindow(server, 'onnx', ctx).catch((e) => log('onnx window:', String(e).split('\n')[0]));
      } finally {
        await server.close();
      }
    }
    if (wanted('trust')) {
      const server = await startCodeServer({ name: 'trust', tmp, exts, trust: true, chromium });
      try {
        await runWindow(server, 'trust', ctx).catch((e) => log('trust window:', String(e).split('\n')[0]));
      } finally {
        await server.close();
      }
    }
  } finally {
    if (!process.env.TML_E2E_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
    else log('kept', tmp);
  }
  const suitesOk = Object.values(result.suiteExit).every((c) => c === 0);
  result.ok = Object.keys(result.steps).length > 0 && Object.values(result.steps).every((s) => s.ok) && suitesOk && !result.trainingRan;
}

function finish(code) {
  result.seconds = elapsedSeconds();
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.writeFileSync(path.join(ARTIFACTS, 'result.json'), JSON.stringify(result, null, 2));
  log(result.ok ? 'E2E PASSED' : 'E2E FAILED', path.join(ARTIFACTS, 'result.json'));
  process.exit(code ?? (result.ok ? 0 : 1));
}

// Interrupted (Ctrl-C, pytest time-out) or over budget: take code-server's process groups down.
const abort = (why, code) => {
  result.error = why;
  for (const c of cleanups) c();
  finish(code);
};
process.once('SIGINT', () => abort('interrupted', 130));
process.once('SIGTERM', () => abort('terminated', 143));
const watchdog = setTimeout(() => abort(`the whole e2e exceeded ${TOTAL_BUDGET_MS / 1000} s`, 2), TOTAL_BUDGET_MS);

main()
  .catch((e) => {
    result.error = String(e?.stack ?? e).split('\n').slice(0, 6).join('\n');
    console.error(result.error);
  })
  .finally(() => {
    clearTimeout(watchdog);
    finish();
  });

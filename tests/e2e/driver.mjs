// End-to-end test of the packaged extension in a real VS Code (code-server) driven by headless
// Chromium, against the real language server.
//
//   node tests/e2e/driver.mjs            (after `bash tests/e2e/setup.sh` and `npm run package`)
//   env: TML_PYTHON      interpreter with the server (default: <repo>/.venv/bin/python)
//        TML_E2E_CACHE   setup.sh's cache folder (default: <repo>/.cache/vscode-e2e)
//        TML_E2E_KEEP=1  keep the temporary folder for inspection
//        TML_E2E_ONLY=main|multiRoot|trust  run one window (development)
//
// One code-server (trust off) serves two windows in turn:
//   main       a single folder: lenses, the Linalg pane, the highlight the cursor draws in it,
//              hovers, colour bands, a squiggle with its message, the export dialog. Its
//              in-editor suite (suite/main.ts) checks through the API meanwhile, then a pane
//              refreshed on save and trust granted mid-start many times (suite/trustRace.ts).
//   multiRoot  two folders with their own interpreters and settings (alpha: the server; beta: a
//              bare venv) and a file outside both (suite/multiRoot.ts).
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
  cleanups, elapsedSeconds, log, need, result, startCodeServer, ui,
} from './workbench.mjs';

const TOTAL_BUDGET_MS = 480_000;
const SUITE_BUDGET_MS = 300_000;

/** The windows: where they open, their cases in order, and whether an in-editor suite runs. */
const WINDOWS = {
  main: { target: (ws) => ({ folder: ws.single }), suite: 'main', cases: ['lenses', 'pane', 'highlight', 'hover', 'bands', 'squiggle', 'exportDialog'] },
  multiRoot: { target: (ws) => ({ workspace: ws.multiRoot }), suite: 'multiRoot', cases: ['alphaFolder', 'betaMissing', 'alphaUnaffected'] },
  trust: { target: (ws) => ({ folder: ws.single }), suite: null, cases: ['untrusted', 'trusted'] },
};

/** Runs a window's cases; with a suite, waits for it (it waits for ui-done-<suite> first). */
async function runWindow(server, name, ctx) {
  const spec = WINDOWS[name];
  const win = await server.open({ window: name, ...spec.target(ctx.ws), suite: !!spec.suite });
  const w = { page: win.page, tmp: ctx.tmp, ws: ctx.ws.single, ...ui(win.page, name, win.reportFile) };
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
    }
    await win.closeWindow();
  }
}

/** Workspaces: a single folder; two folders (alpha, beta) with their own settings; a file outside. */
function makeWorkspaces(tmp) {
  const single = path.join(tmp, 'ws');
  fs.mkdirSync(single);
  for (const f of ['mlp.py', 'unsupported_ops.py']) fs.copyFileSync(path.join(ROOT, 'examples', f), path.join(single, f));

  // An interpreter without the server: a venv with nothing installed, from the same base Python.
  const bare = path.join(tmp, 'bare-venv');
  execFileSync(PYTHON, ['-m', 'venv', '--without-pip', bare], { timeout: 60_000 });
  const mr = path.join(tmp, 'mr');
  const folders = {
    alpha: { 'torchMlirLens.python': PYTHON, 'torchMlirLens.lensTargets': ['linalg', 'stablehlo'] },
    beta: { 'torchMlirLens.python': path.join(bare, 'bin', 'python') },
  };
  for (const [name, settings] of Object.entries(folders)) {
    fs.mkdirSync(path.join(mr, name, '.vscode'), { recursive: true });
    fs.writeFileSync(path.join(mr, name, '.vscode', 'settings.json'), JSON.stringify(settings, null, 2));
    fs.copyFileSync(path.join(ROOT, 'examples', 'mlp.py'), path.join(mr, name, `${name}_model.py`));
  }
  fs.mkdirSync(path.join(mr, 'outside'));
  fs.copyFileSync(path.join(ROOT, 'examples', 'mlp.py'), path.join(mr, 'outside', 'solo.py'));
  const multiRoot = path.join(mr, 'two.code-workspace');
  fs.writeFileSync(multiRoot, JSON.stringify({ folders: [{ path: 'alpha' }, { path: 'beta' }], settings: {} }, null, 2));
  return { single, multiRoot };
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
    log('installing', path.basename(VSIX));
    execFileSync(CODE_SERVER, ['--user-data-dir', path.join(tmp, 'ud-install'), '--extensions-dir', exts, '--install-extension', VSIX], {
      env: { ...process.env, PATH: `${N24}${path.delimiter}${process.env.PATH}`, XDG_DATA_HOME: path.join(tmp, 'xdg', 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    const ctx = { tmp, ws };
    if (wanted('main') || wanted('multiRoot')) {
      const server = await startCodeServer({ name: 'shared', tmp, exts, trust: false, chromium });
      try {
        if (wanted('main')) await runWindow(server, 'main', ctx).catch((e) => log('main window:', String(e).split('\n')[0]));
        if (wanted('multiRoot')) await runWindow(server, 'multiRoot', ctx).catch((e) => log('multiRoot window:', String(e).split('\n')[0]));
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
  result.ok = Object.keys(result.steps).length > 0 && Object.values(result.steps).every((s) => s.ok) && suitesOk;
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

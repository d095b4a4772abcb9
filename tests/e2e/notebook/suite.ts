// Runs inside the real extension host during the notebook e2e (extensionTestsPath): checks
// through VS Code's API what the server gave a Jupyter notebook's cells (lenses, hover,
// diagnostics) and that the IR pane's definitions point into cells. The driver does the UI
// part meanwhile; this suite keeps the extension host alive until the driver says it is done.
//
// Files, beside the workspace folder: nb-suite-result.json (written), nb-ui-done (waited for).

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';

const EXTENSION_ID = 'torch-mlir-lens.torch-mlir-lens';
const NOTEBOOK = 'spread_model.ipynb';

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      lastError = String(e);
    }
    await new Promise((r) => setTimeout(r, 500)); // polling interval of a condition
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}`);
}

function hoverText(hovers: vscode.Hover[]): string {
  return hovers
    .flatMap((h) => h.contents)
    .map((c) => (typeof c === 'string' ? c : (c as { value: string }).value))
    .join('\n');
}

function cellWith(nb: vscode.NotebookDocument, needle: string): vscode.NotebookCell {
  const cell = nb.getCells().find((c) => c.document.getText().includes(needle));
  if (!cell) throw new Error(`no cell with ${needle}`);
  return cell;
}

function lineOf(doc: vscode.TextDocument, needle: string): number {
  for (let i = 0; i < doc.lineCount; i++) if (doc.lineAt(i).text.includes(needle)) return i;
  throw new Error(`${needle} not in the cell`);
}

export async function run(): Promise<void> {
  const ws = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!ws) throw new Error('no workspace folder');
  const base = path.dirname(ws.fsPath);
  const steps: Record<string, { ok: boolean; detail: string; ms: number }> = {};
  const step = async (name: string, fn: () => Promise<string>) => {
    const t0 = Date.now();
    try {
      steps[name] = { ok: true, detail: await fn(), ms: Date.now() - t0 };
    } catch (e) {
      steps[name] = { ok: false, detail: String(e), ms: Date.now() - t0 };
    }
    fs.writeFileSync(path.join(base, 'nb-suite-result.json'), JSON.stringify(steps, null, 2));
  };

  await step('activated', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    if (!ext) throw new Error(`${EXTENSION_ID} is not installed`);
    await ext.activate();
    return `${ext.id} ${ext.packageJSON.version}`;
  });

  const nbUri = vscode.Uri.joinPath(ws, NOTEBOOK);
  await vscode.workspace.openNotebookDocument(nbUri);
  // Looked up each time: the editor may reopen the notebook (its cells get new URIs then).
  const current = () => vscode.workspace.notebookDocuments.find((n) => n.uri.toString() === nbUri.toString());
  const cellOf = (needle: string) => {
    const nb = current();
    if (!nb) throw new Error('the notebook is not open');
    return cellWith(nb, needle);
  };

  await step('cellLenses', async () => {
    let model = cellOf('class Model');
    const lenses = await waitFor('the "Show Linalg IR" lens in the model cell', 150_000, async () => {
      model = cellOf('class Model');
      const found = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', model.document.uri, 50);
      return (found ?? []).some((l) => l.command?.title === 'Show Linalg IR') ? found : undefined;
    });
    const show = lenses.find((l) => l.command?.title === 'Show Linalg IR');
    const line = lineOf(model.document, 'class Model');
    if (show?.range.start.line !== line) throw new Error(`lens at line ${show?.range.start.line}, class at ${line}`);
    return `${lenses.length} lenses, "Show Linalg IR" on cell line ${line + 1}`;
  });

  await step('cellHover', async () => {
    const model = cellOf('class Model');
    const line = lineOf(model.document, 'return self.head(x)');
    const pos = new vscode.Position(line, model.document.lineAt(line).firstNonWhitespaceCharacterIndex + 12);
    const text = await waitFor('a hover with MLIR in the model cell', 150_000, async () => {
      const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', model.document.uri, pos);
      const t = hoverText(hovers ?? []);
      return t.includes('linalg.') ? t : undefined;
    });
    if (!text.includes(`cell ${model.index + 1} line ${line + 1}`)) throw new Error(`hover header: ${text.slice(0, 200)}`);
    return text.slice(0, 300);
  });

  await step('cellDiagnostics', async () => {
    const helper = cellOf('class Block');
    const model = cellOf('class Model');
    const line = lineOf(helper.document, 'torch.atan2(');
    const diag = await waitFor('the atan2 diagnostic in the helper cell', 60_000, async () =>
      vscode.languages.getDiagnostics(helper.document.uri).find((d) => String(d.code).startsWith('aten.atan2')));
    if (diag.range.start.line !== line) throw new Error(`diagnostic at ${diag.range.start.line}, atan2 at ${line}`);
    const elsewhere = vscode.languages.getDiagnostics(model.document.uri).filter((d) => String(d.code).startsWith('aten.'));
    if (elsewhere.length) throw new Error('the op diagnostic also landed in the model cell');
    return `${diag.message} (cell ${helper.index + 1}, line ${line + 1})`;
  });

  await step('paneDefinition', async () => {
    // The pane the driver opened from the lens: its matmul lines lead into the cells.
    const pane = await waitFor('the Linalg pane of Model', 180_000, async () =>
      vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'torch-mlir-lens' && d.getText().includes('linalg.matmul')));
    const line = pane.getText().split('\n').findIndex((l) => l.includes('linalg.matmul'));
    const links = await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>(
      'vscode.executeDefinitionProvider', pane.uri, new vscode.Position(line, 10));
    const targets = (links ?? []).map((l) => ('targetUri' in l ? l.targetUri : l.uri).toString());
    const cells = new Set([cellOf('class Block').document.uri.toString(), cellOf('class Model').document.uri.toString()]);
    if (!targets.length || !targets.every((t) => cells.has(t))) throw new Error(`definitions: ${targets.join(', ')}`);
    return `IR line ${line + 1} → ${targets.join(', ')}`;
  });

  await waitFor('the UI part of the test', 400_000, async () => (fs.existsSync(path.join(base, 'nb-ui-done')) ? true : undefined)).catch(() => undefined);
  if (!Object.values(steps).every((s) => s.ok)) throw new Error('some in-editor notebook checks failed');
}

// The notebook window: through VS Code's API, what the server gave a Jupyter notebook's cells
// (lenses, a hover, diagnostics in the helper block's cell) and that the IR pane's definitions
// point into cells. The notebook (tests/notebooks/spread_model.ipynb) spreads its model over
// cells; no kernel is needed.

import * as vscode from 'vscode';
import { extensionApi, hoverText, lineOf, Steps, untilDriverDone, waitFor } from './common';

export const NOTEBOOK = 'spread_model.ipynb';

function cellWith(nb: vscode.NotebookDocument, needle: string): vscode.NotebookCell {
  const cell = nb.getCells().find((c) => c.document.getText().includes(needle));
  if (!cell) throw new Error(`no cell with ${needle}`);
  return cell;
}

export async function runNotebook(ws: vscode.Uri): Promise<void> {
  const steps = new Steps('notebook');
  await steps.run('activated', async () => {
    const api = await extensionApi();
    return `test API with ${api.client.all().length} server(s)`;
  });

  const nbUri = vscode.Uri.joinPath(ws, NOTEBOOK);
  await vscode.workspace.openNotebookDocument(nbUri);
  // Looked up each time: the editor may reopen the notebook (its cells get new URIs then).
  const cellOf = (needle: string) => {
    const nb = vscode.workspace.notebookDocuments.find((n) => n.uri.toString() === nbUri.toString());
    if (!nb) throw new Error('the notebook is not open');
    return cellWith(nb, needle);
  };

  await steps.run('cellLenses', async () => {
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

  await steps.run('cellHover', async () => {
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

  await steps.run('cellDiagnostics', async () => {
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

  await steps.run('paneDefinition', async () => {
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

  await untilDriverDone('ui-done-notebook').catch(() => undefined);
  steps.check();
}

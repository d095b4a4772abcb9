// A user's wrapper around a tiny `transformers` Llama (random weights, nothing downloaded).
const LLAMA_WRAPPER = `import torch
from torch import nn
from transformers import LlamaConfig, LlamaModel


# torch-mlir-lens: inputs=(torch.randint(0, 64, (1, 8)),)
class LlamaWrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = LlamaModel(LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2,
                                         num_key_value_heads=2, use_cache=False))

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state
`;

// The single-folder workspace: through the editor's own API, what the server gave the installed
// extension (lenses, a hover with MLIR, the pane's definition links, the IR after a pass,
// diagnostics); after the driver's UI steps, a pane refreshed on save and the trust race.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { SCHEME, toUriParts } from '../../../client/src/paneSpec';
import { baseDir, extensionApi, hoverText, lensTitles, lineOf, Steps, untilDriverDone, waitFor } from './common';
import { trustRace } from './trustRace';

export async function runMain(ws: vscode.Uri): Promise<void> {
  const steps = new Steps('main');
  await steps.run('activated', async () => {
    const api = await extensionApi();
    return `test API with ${api.client.all().length} server(s)`;
  });

  const mlp = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(ws, 'mlp.py'));
  await steps.run('lenses', async () => {
    const titles = await waitFor('the "Show Linalg IR" lens', 150_000, async () => {
      const t = await lensTitles(mlp.uri);
      return t.includes('Show Linalg IR') ? t : undefined;
    });
    return titles.join(' | ');
  });

  await steps.run('hover', async () => {
    const line = lineOf(mlp, 'F.relu(self.fc1(x))');
    const pos = new vscode.Position(line, mlp.lineAt(line).firstNonWhitespaceCharacterIndex + 4);
    const text = await waitFor('a hover with MLIR', 150_000, async () => {
      const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', mlp.uri, pos);
      const t = hoverText(hovers ?? []);
      return t.includes('```mlir') && /linalg\.|arith\./.test(t) ? t : undefined;
    });
    return text.slice(0, 400);
  });

  await steps.run('paneDefinition', async () => {
    // The Linalg pane as a document (not shown: the driver owns the layout), then Ctrl/Cmd-click
    // on its first linalg.matmul: it must lead to the source line that produced it.
    const { path: panePath, query } = toUriParts({ source: mlp.uri.toString(), module: 'MLP', target: 'linalg' });
    const pane = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: SCHEME, path: panePath, query }));
    const matmul = await waitFor('linalg.matmul in the pane', 150_000, async () => {
      const i = pane.getText().split('\n').findIndex((l) => l.includes('linalg.matmul'));
      return i >= 0 ? i : undefined;
    });
    if (pane.languageId !== 'mlir') throw new Error(`pane language is ${pane.languageId}`);
    const pos = new vscode.Position(matmul, pane.lineAt(matmul).firstNonWhitespaceCharacterIndex);
    const defs = await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>(
      'vscode.executeDefinitionProvider', pane.uri, pos);
    const targets = (defs ?? []).map((d) => ('targetUri' in d ? { uri: d.targetUri, line: d.targetRange.start.line } : { uri: d.uri, line: d.range.start.line }));
    const want = lineOf(mlp, 'F.relu(self.fc1(x))');
    if (!targets.some((t) => t.uri.toString() === mlp.uri.toString() && t.line === want)) {
      throw new Error(`definition of pane line ${matmul + 1} → ${JSON.stringify(targets.map((t) => `${t.uri.path}:${t.line + 1}`))}, want mlp.py:${want + 1}`);
    }
    return `${panePath}: line ${matmul + 1} (linalg.matmul) → mlp.py:${want + 1}`;
  });

  await steps.run('passPane', async () => {
    // What "Show IR After Pass…" opens: the IR after the first pass of the Linalg pipeline.
    const { path: passPath, query } = toUriParts({ source: mlp.uri.toString(), module: 'MLP', target: 'linalg', pass: 0, passName: 'first' });
    const uri = vscode.Uri.from({ scheme: SCHEME, path: passPath, query });
    await vscode.workspace.openTextDocument(uri);
    let last = '';
    const text = await waitFor('IR after the first pass', 150_000, async () => {
      // Looked up each time: a virtual document no editor shows may be closed by VS Code and
      // its object keeps the old text; opening it again asks the extension for its content.
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
      const doc = open ?? (await vscode.workspace.openTextDocument(uri));
      const t = doc.getText();
      last = `${open ? 'open' : 'reopened'} document: ${JSON.stringify(t.slice(0, 300))}`;
      return /func\.func|module/.test(t) && !t.includes('lowering MLP to') ? t : undefined;
    }, () => last);
    if (text.startsWith('// Torch-MLIR Lens:')) throw new Error(text.split('\n')[0]);
    return `${passPath}: ${text.split('\n').length} lines`;
  });

  const bad = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(ws, 'unsupported_ops.py'));
  await steps.run('diagnostics', async () => {
    const erfinvLine = lineOf(bad, 'torch.erfinv(');
    const diags = await waitFor('a torch-mlir diagnostic on the erfinv line', 180_000, async () => {
      const d = vscode.languages.getDiagnostics(bad.uri).filter((x) => x.source === 'torch-mlir');
      return d.some((x) => x.range.start.line === erfinvLine) ? d : undefined;
    });
    return diags.map((d) => `${d.range.start.line + 1}: ${d.message.split('\n')[0]}`).join(' | ').slice(0, 600);
  });

  await untilDriverDone('ui-done-main').catch(() => undefined);

  await steps.run('refreshOnSave', async () => {
    // After the UI steps (they read mlp.py as shipped): widen the hidden layer, save, and the
    // open Linalg pane must show the new shapes.
    const { path: panePath, query } = toUriParts({ source: mlp.uri.toString(), module: 'MLP', target: 'linalg' });
    const pane = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: SCHEME, path: panePath, query }));
    await waitFor('the pane with the 32-wide layer', 120_000, async () =>
      pane.getText().includes('tensor<2x32xf32>') ? true : undefined,
    );
    const src = await vscode.workspace.openTextDocument(mlp.uri); // the UI may have closed its editor
    const line = lineOf(src, 'hidden: int = 32');
    const col = src.lineAt(line).text.indexOf('hidden: int = 32') + 'hidden: int = '.length;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(src.uri, new vscode.Range(line, col, line, col + 2), '48');
    if (!(await vscode.workspace.applyEdit(edit)) || !(await src.save())) throw new Error('could not edit and save mlp.py');
    await waitFor('the pane to show the 48-wide layer', 120_000, async () =>
      pane.getText().includes('tensor<2x48xf32>') ? true : undefined,
    );
    return 'pane re-lowered after save (tensor<2x48xf32>)';
  });

  await steps.run('libraryDefinition', async () => {
    // A wrapper around library code, beside (not in) the workspace so nothing checks it on its
    // own: Ctrl/Cmd-click on an op made in modeling_llama.py opens that file at that line.
    const file = path.join(baseDir(), 'llama_wrapper.py');
    fs.writeFileSync(file, LLAMA_WRAPPER);
    const source = vscode.Uri.file(file);
    // Opened first, as a user opens a file before its IR: a file outside every folder is
    // trusted only once VS Code has opened it (the server refuses one asked for by URI alone).
    await vscode.workspace.openTextDocument(source);
    const { path: panePath, query } = toUriParts({ source: source.toString(), module: 'LlamaWrapper', target: 'linalg' });
    const pane = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: SCHEME, path: panePath, query }));
    await waitFor('the LlamaWrapper pane', 150_000, async () => (pane.getText().includes('func.func') ? true : undefined));
    const lines = pane.getText().split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!/= (linalg|tensor|arith)\./.test(lines[i])) continue;
      const pos = new vscode.Position(i, lines[i].length - lines[i].trimStart().length);
      const defs = await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>('vscode.executeDefinitionProvider', pane.uri, pos);
      const targets = (defs ?? []).map((d) => ('targetUri' in d ? { uri: d.targetUri, line: d.targetRange.start.line } : { uri: d.uri, line: d.range.start.line }));
      if (!targets.some((t) => t.uri.path.endsWith('/modeling_llama.py'))) continue;
      // One target: the click opens the library line itself (not a list of the call chain).
      if (targets.length !== 1) throw new Error(`pane line ${i + 1} → ${targets.length} targets`);
      const lib = await vscode.workspace.openTextDocument(targets[0].uri);
      const code = lib.lineAt(targets[0].line).text.trim();
      if (!code) throw new Error(`modeling_llama.py:${targets[0].line + 1} is empty`);
      return `pane line ${i + 1} → modeling_llama.py:${targets[0].line + 1} (${code.slice(0, 60)})`;
    }
    throw new Error('no op of the pane leads into modeling_llama.py');
  });

  await steps.run('trustRace', () => trustRace(mlp));
  steps.check();
}

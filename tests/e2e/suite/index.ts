// Runs inside the real extension host of the e2e VS Code (extensionTestsPath). It checks
// through the editor's own API what the server gave the installed extension: code lenses,
// a hover with MLIR, diagnostics on unsupported ops. The driver does the UI part in parallel;
// this suite keeps the extension host alive until the driver says it is done.
//
// Files, beside the workspace folder: suite-result.json (written), ui-done (waited for).

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { SCHEME, toUriParts } from '../../../client/src/paneSpec';

const EXTENSION_ID = 'torch-mlir-lens.torch-mlir-lens';

// A user's module around library code (transformers' Idefics3 vision embeddings, tiny config).
const LIBRARY_WRAPPER = `import torch
from torch import nn
from transformers.models.idefics3.configuration_idefics3 import Idefics3VisionConfig
from transformers.models.idefics3.modeling_idefics3 import Idefics3VisionEmbeddings


# torch-mlir-lens: inputs=(torch.randn(1, 3, 32, 32), torch.ones(1, 4, 4, dtype=torch.bool))
class PatchEmbed(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Idefics3VisionEmbeddings(
            Idefics3VisionConfig(hidden_size=16, image_size=32, patch_size=8))

    def forward(self, pixels, mask):
        return self.embed(pixels, mask)
`;

interface Step {
  ok: boolean;
  ms: number;
  detail: string;
}

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
    await new Promise((r) => setTimeout(r, 500)); // polling interval of a condition, not a fixed wait
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}`);
}

function hoverText(hovers: vscode.Hover[]): string {
  return hovers
    .flatMap((h) => h.contents)
    .map((c) => (typeof c === 'string' ? c : c instanceof vscode.MarkdownString ? c.value : (c as { value: string }).value))
    .join('\n');
}

function lineOf(doc: vscode.TextDocument, needle: string): number {
  for (let i = 0; i < doc.lineCount; i++) if (doc.lineAt(i).text.includes(needle)) return i;
  throw new Error(`${needle} not in ${doc.uri.fsPath}`);
}

export async function run(): Promise<void> {
  const ws = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!ws) throw new Error('no workspace folder');
  const base = path.dirname(ws.fsPath);
  const steps: Record<string, Step> = {};
  const step = async (name: string, fn: () => Promise<string>) => {
    const t0 = Date.now();
    try {
      steps[name] = { ok: true, detail: await fn(), ms: Date.now() - t0 };
    } catch (e) {
      steps[name] = { ok: false, detail: String(e), ms: Date.now() - t0 };
    }
    fs.writeFileSync(path.join(base, 'suite-result.json'), JSON.stringify(steps, null, 2));
  };

  await step('activated', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID);
    if (!ext) throw new Error(`${EXTENSION_ID} is not installed`);
    await ext.activate();
    return `${ext.id} ${ext.packageJSON.version} from ${ext.extensionUri.toString()}`;
  });

  const mlp = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(ws, 'mlp.py'));
  await step('lenses', async () => {
    const titles = await waitFor('the "Show Linalg IR" lens', 150_000, async () => {
      const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', mlp.uri, 50);
      const t = (lenses ?? []).map((l) => l.command?.title ?? '');
      return t.includes('Show Linalg IR') ? t : undefined;
    });
    return titles.join(' | ');
  });

  await step('hover', async () => {
    const line = lineOf(mlp, 'F.relu(self.fc1(x))');
    const pos = new vscode.Position(line, mlp.lineAt(line).firstNonWhitespaceCharacterIndex + 4);
    const text = await waitFor('a hover with MLIR', 150_000, async () => {
      const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', mlp.uri, pos);
      const t = hoverText(hovers ?? []);
      return t.includes('```mlir') && /linalg\.|arith\./.test(t) ? t : undefined;
    });
    return text.slice(0, 400);
  });

  await step('paneDefinition', async () => {
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

  await step('passPane', async () => {
    // What "Show IR After Pass…" opens: the IR after the first pass of the Linalg pipeline.
    const { path: passPath, query } = toUriParts({ source: mlp.uri.toString(), module: 'MLP', target: 'linalg', pass: 0, passName: 'first' });
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: SCHEME, path: passPath, query }));
    const text = await waitFor('IR after the first pass', 150_000, async () => {
      const t = doc.getText();
      return /func\.func|module/.test(t) && !t.includes('lowering MLP to') ? t : undefined;
    });
    if (text.startsWith('// Torch-MLIR Lens:')) throw new Error(text.split('\n')[0]);
    return `${passPath}: ${text.split('\n').length} lines`;
  });

  const bad = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(ws, 'unsupported_ops.py'));
  await step('diagnostics', async () => {
    const erfinvLine = lineOf(bad, 'torch.erfinv(');
    const diags = await waitFor('a torch-mlir diagnostic on the erfinv line', 180_000, async () => {
      const d = vscode.languages.getDiagnostics(bad.uri).filter((x) => x.source === 'torch-mlir');
      return d.some((x) => x.range.start.line === erfinvLine) ? d : undefined;
    });
    return diags.map((d) => `${d.range.start.line + 1}: ${d.message.split('\n')[0]}`).join(' | ').slice(0, 600);
  });

  // Keep the extension host up while the driver drives the UI (it writes ui-done).
  await waitFor('the driver to finish the UI steps', 240_000, async () =>
    fs.existsSync(path.join(base, 'ui-done')) ? true : undefined,
  ).catch(() => undefined);

  await step('refreshOnSave', async () => {
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

  await step('libraryDefinition', async () => {
    // A wrapper around `transformers` code, beside (not in) the workspace so nothing checks it
    // on its own: Ctrl/Cmd-click on an op its library made leads into modeling_idefics3.py.
    const file = path.join(base, 'library_wrapper.py');
    fs.writeFileSync(file, LIBRARY_WRAPPER);
    const source = vscode.Uri.file(file);
    const { path: panePath, query } = toUriParts({ source: source.toString(), module: 'PatchEmbed', target: 'linalg' });
    const pane = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: SCHEME, path: panePath, query }));
    await waitFor('the PatchEmbed pane', 150_000, async () => (pane.getText().includes('func.func') ? true : undefined));
    const lines = pane.getText().split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!/= (linalg|tensor|arith)\./.test(lines[i])) continue;
      const pos = new vscode.Position(i, lines[i].length - lines[i].trimStart().length);
      const defs = await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[]>('vscode.executeDefinitionProvider', pane.uri, pos);
      const targets = (defs ?? []).map((d) => ('targetUri' in d ? { uri: d.targetUri, line: d.targetRange.start.line } : { uri: d.uri, line: d.range.start.line }));
      if (!targets.some((t) => t.uri.path.endsWith('/modeling_idefics3.py'))) continue;
      // One target: the click opens the library line itself (not a list of the call chain).
      if (targets.length !== 1) throw new Error(`pane line ${i + 1} → ${targets.length} targets`);
      const lib = await vscode.workspace.openTextDocument(targets[0].uri);
      const code = lib.lineAt(targets[0].line).text.trim();
      if (!code) throw new Error(`modeling_idefics3.py:${targets[0].line + 1} is empty`);
      return `pane line ${i + 1} → modeling_idefics3.py:${targets[0].line + 1} (${code.slice(0, 60)})`;
    }
    throw new Error('no op of the pane leads into modeling_idefics3.py');
  });

  const failed = Object.entries(steps).filter(([, s]) => !s.ok);
  if (failed.length) throw new Error(`failed: ${failed.map(([n, s]) => `${n}: ${s.detail}`).join('; ')}`);
}

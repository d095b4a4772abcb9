// The two-folder workspace (alpha: an interpreter with the server and its own lens targets;
// beta: a bare interpreter) plus a file outside both: one server per folder and a default one,
// each with its own interpreter and settings; removing a folder stops its server.

import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { extensionApi, lensTitles, Steps, untilDriverDone, waitFor } from './common';

export async function runMultiRoot(): Promise<void> {
  const steps = new Steps('multiRoot');
  const folders = vscode.workspace.workspaceFolders ?? [];
  const alpha = folders.find((f) => f.name === 'alpha');
  const beta = folders.find((f) => f.name === 'beta');
  if (!alpha || !beta) throw new Error(`want folders alpha and beta, have ${folders.map((f) => f.name).join(', ')}`);
  const api = await extensionApi();
  const venvPython = process.env.TML_E2E_PYTHON ?? '';
  const barePython = fs.readFileSync(path.join(beta.uri.fsPath, '.vscode', 'settings.json'), 'utf8');

  await steps.run('alphaOwnSettings', async () => {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(alpha.uri, 'alpha_model.py'));
    const titles = await waitFor("alpha's lenses", 150_000, async () => {
      const t = await lensTitles(doc.uri);
      return t.includes('Show StableHLO IR') ? t : undefined;
    });
    if (titles.includes('Show TOSA IR')) throw new Error(`alpha's lensTargets exclude TOSA, got ${titles.join(' | ')}`);
    const s = api.client.serverFor(doc.uri);
    if (s.folder?.name !== 'alpha' || s.interpreter?.path !== venvPython) {
      throw new Error(`alpha's server: folder ${s.folder?.name}, interpreter ${s.interpreter?.path}, want ${venvPython}`);
    }
    return `alpha: ${titles.join(' | ')} (interpreter ${s.interpreter.path} from ${s.interpreter.source})`;
  });

  await steps.run('betaMissingServer', async () => {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.joinPath(beta.uri, 'beta_model.py'));
    const s = api.client.serverFor(doc.uri);
    await waitFor("beta's server to be found missing", 60_000, async () => (s.state === 'missing' ? true : undefined));
    if (!s.interpreter || !barePython.includes(s.interpreter.path)) throw new Error(`beta's interpreter ${s.interpreter?.path}`);
    const lowered = await api.client.request('torchMlirLens/modules', { uri: doc.uri.toString() }).then(
      () => 'answered',
      (e) => String(e),
    );
    if (lowered === 'answered') throw new Error("a request for beta's file was answered by another folder's server");
    return `beta: ${s.detail} | its request: ${lowered.slice(0, 160)}`;
  });

  await steps.run('outsideDefaultServer', async () => {
    // A file outside both folders: the default server, with the window's settings.
    const outside = vscode.Uri.file(path.join(path.dirname(alpha.uri.fsPath), 'outside', 'solo.py'));
    const doc = await vscode.workspace.openTextDocument(outside);
    const titles = await waitFor('lenses on the file outside the folders', 150_000, async () => {
      const t = await lensTitles(doc.uri);
      return t.includes('Show Linalg IR') ? t : undefined;
    });
    if (!titles.includes('Show TOSA IR') || titles.includes('Show StableHLO IR')) throw new Error(`default lens targets expected, got ${titles.join(' | ')}`);
    const s = api.client.serverFor(doc.uri);
    if (s.folder || !s.running) throw new Error(`outside file served by ${s.label} (running ${s.running})`);
    const ir = await api.client.request<{ ir: string }>('torchMlirLens/lower', { uri: doc.uri.toString(), module: 'MLP', target: 'linalg' });
    if (!ir.ir.includes('linalg.')) throw new Error(`no linalg IR: ${ir.ir.slice(0, 200)}`);
    return `default server (${s.interpreter?.path}): ${titles.join(' | ')}; lowered MLP`;
  });

  await untilDriverDone('ui-done-multiRoot').catch(() => undefined);

  await steps.run('folderRemoved', async () => {
    const betaKey = beta.uri.toString();
    if (!api.client.all().some((s) => s.key === betaKey)) throw new Error("beta's server never existed");
    if (!vscode.workspace.updateWorkspaceFolders(1, 1)) throw new Error('could not remove beta');
    await waitFor("beta's server to go", 30_000, async () => (api.client.all().some((s) => s.key === betaKey) ? undefined : true));
    const alphaServer = api.client.all().find((s) => s.folder?.name === 'alpha');
    if (!alphaServer?.running) throw new Error("alpha's server stopped too");
    return `servers left: ${api.client.all().map((s) => s.label).join(', ')}`;
  });
  steps.check();
}

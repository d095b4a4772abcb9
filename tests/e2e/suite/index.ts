// Runs inside the real extension host of the e2e VS Code (extensionTestsPath) and checks,
// through the editor's API and the extension's test API, what the driver cannot see from the
// page. Which suite runs depends on the window: the multi-root workspace, the notebook's folder
// or the single folder.
// Each writes <TML_E2E_BASE>/suite-result-<name>.json and waits for the driver's UI steps.

import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { runMain } from './main';
import { runMultiRoot } from './multiRoot';
import { NOTEBOOK, runNotebook } from './notebook';

export async function run(): Promise<void> {
  if (vscode.workspace.workspaceFile && vscode.workspace.workspaceFile.scheme === 'file') return runMultiRoot();
  const ws = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!ws) throw new Error('no workspace folder');
  if (fs.existsSync(vscode.Uri.joinPath(ws, NOTEBOOK).fsPath)) return runNotebook(ws);
  return runMain(ws);
}

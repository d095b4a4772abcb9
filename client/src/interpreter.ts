// Which Python runs a folder's server: the `torchMlirLens.python` setting (folder scope first),
// else the Python extension's active interpreter for that folder (through its published API,
// `@vscode/python-extension`, when the extension is installed; never required), else `python3`.

import { PVSC_EXTENSION_ID, PythonExtension } from '@vscode/python-extension';
import * as vscode from 'vscode';
import { SECTION } from './settings';

export interface Interpreter {
  path: string;
  source: 'setting' | 'python-extension' | 'PATH';
}

let api: Promise<PythonExtension | undefined> | undefined;

/** The Python extension's API, or undefined when it is missing, disabled or broken. */
function pythonExtension(): Promise<PythonExtension | undefined> {
  if (!vscode.extensions.getExtension(PVSC_EXTENSION_ID)) return Promise.resolve(undefined);
  api ??= PythonExtension.api().then(
    (a) => (a?.environments ? a : undefined),
    () => undefined, // a broken Python extension must not stop us: fall back to PATH
  );
  return api;
}

/** The interpreter for `resource` (a workspace folder or file; undefined: outside every folder). */
export async function resolveInterpreter(resource?: vscode.Uri): Promise<Interpreter> {
  const configured = vscode.workspace.getConfiguration(SECTION, resource ?? null).get<string>('python', '').trim();
  if (configured) return { path: expandHome(configured), source: 'setting' };
  const python = await pythonExtension();
  if (python) {
    try {
      const active = python.environments.getActiveEnvironmentPath(resource);
      const env = await python.environments.resolveEnvironment(active);
      const exe = env?.executable.uri?.fsPath;
      if (exe) return { path: exe, source: 'python-extension' };
    } catch {
      // fall through to PATH
    }
  }
  return { path: process.platform === 'win32' ? 'python' : 'python3', source: 'PATH' };
}

/**
 * Fires when the Python extension's active interpreter changes, with the folder it changed for
 * (undefined: the whole workspace). A no-op without the Python extension.
 */
export async function onDidChangePythonInterpreter(
  listener: (folder: vscode.WorkspaceFolder | undefined) => void,
): Promise<vscode.Disposable> {
  const python = await pythonExtension();
  if (!python) return new vscode.Disposable(() => undefined);
  return python.environments.onDidChangeActiveEnvironmentPath((e) => listener(e.resource));
}

function expandHome(p: string): string {
  const home = process.env.HOME ?? process.env.USERPROFILE;
  return home && (p === '~' || p.startsWith('~/')) ? home + p.slice(1) : p;
}

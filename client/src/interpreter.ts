// Which Python runs the server: the `torchMlirLens.python` setting, else the Python extension's
// active interpreter (through its API, when installed; never required), else `python3`.

import * as vscode from 'vscode';

export interface Interpreter {
  path: string;
  source: 'setting' | 'python-extension' | 'PATH';
}

const PYTHON_EXTENSION = 'ms-python.python';

// The parts of the Python extension's API we use (its `environments` API, 2023+).
interface PythonEnvironmentsApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(env: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

async function pythonExtensionApi(): Promise<PythonEnvironmentsApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonEnvironmentsApi>(PYTHON_EXTENSION);
  if (!ext) return undefined;
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    return api?.environments ? api : undefined;
  } catch {
    return undefined;
  }
}

export async function resolveInterpreter(resource?: vscode.Uri): Promise<Interpreter> {
  const configured = vscode.workspace.getConfiguration('torchMlirLens', resource).get<string>('python', '').trim();
  if (configured) return { path: expandHome(configured), source: 'setting' };
  const api = await pythonExtensionApi();
  if (api) {
    try {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const env = await api.environments.resolveEnvironment(active);
      const exe = env?.executable.uri?.fsPath;
      if (exe) return { path: exe, source: 'python-extension' };
    } catch {
      // fall through to PATH: a broken Python extension must not stop us
    }
  }
  return { path: process.platform === 'win32' ? 'python' : 'python3', source: 'PATH' };
}

/** Fires when the Python extension's active interpreter changes (no-op without it). */
export async function onDidChangePythonInterpreter(listener: () => void): Promise<vscode.Disposable> {
  const api = await pythonExtensionApi();
  return api ? api.environments.onDidChangeActiveEnvironmentPath(() => listener()) : new vscode.Disposable(() => undefined);
}

function expandHome(p: string): string {
  const home = process.env.HOME ?? process.env.USERPROFILE;
  return home && (p === '~' || p.startsWith('~/')) ? home + p.slice(1) : p;
}

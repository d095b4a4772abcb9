// Before starting the server: does the chosen interpreter have what it needs? If not, say
// exactly what is missing and offer to `pip install` this extension's Python package (shipped
// inside the .vsix: server/ + pyproject.toml) into that interpreter, in a terminal. Later, a
// target whose compiler is missing (IREE) gets the same offer for the package's extra.

import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import type { Interpreter } from './interpreter';
import { neutralDirectory } from './launch';
import type { MissingDependencyParams } from './protocol';

/** Python import name → what to call it in the message. */
const REQUIRED: Record<string, string> = {
  torch_mlir_lens: 'torch-mlir-lens (the language server)',
  torch_mlir: 'torch-mlir',
  torch: 'torch',
  pygls: 'pygls',
};

// The first line drops the working directory `-c` puts first on sys.path, before anything is
// imported: a repository's own json.py must not run when its interpreter is checked. (Not `-P`:
// the probe must run, and report its version, on interpreters older than 3.11 too.)
const PROBE = `
import sys; sys.path[:1] == [""] and sys.path.pop(0)
import importlib.util, json
mods = ${JSON.stringify(Object.keys(REQUIRED))}
print(json.dumps({"version": list(sys.version_info[:3]),
                  "missing": [m for m in mods if importlib.util.find_spec(m) is None]}))
`;

export interface CheckResult {
  ok: boolean;
  problem?: string; // one sentence for people
  missing: string[]; // import names
  canInstall: boolean;
}

export function describeMissing(missing: readonly string[]): string {
  return missing.map((m) => REQUIRED[m] ?? m).join(', ');
}

export function checkInterpreter(python: Interpreter, log: vscode.LogOutputChannel): Promise<CheckResult> {
  return new Promise((resolve) => {
    execFile(python.path, ['-c', PROBE], { timeout: 30_000, cwd: neutralDirectory() }, (err, stdout, stderr) => {
      if (err) {
        const notFound = (err as NodeJS.ErrnoException).code === 'ENOENT';
        log.error(`interpreter check failed for ${python.path}: ${err.message} ${stderr}`);
        resolve({
          ok: false,
          missing: [],
          canInstall: false,
          problem: notFound
            ? `Python interpreter "${python.path}" (from ${python.source}) was not found.`
            : `Python interpreter "${python.path}" could not be run: ${err.message.split('\n')[0]}`,
        });
        return;
      }
      try {
        const info = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as { version: number[]; missing: string[] };
        if (info.missing.length) {
          const [major, minor] = info.version;
          const installable = major === 3 && minor === 11; // torch-mlir's wheels need 3.11
          resolve({
            ok: false,
            missing: info.missing,
            canInstall: installable,
            problem:
              `The Python interpreter "${python.path}" (Python ${info.version.join('.')}, from ${python.source}) lacks ${describeMissing(info.missing)}.` +
              (installable ? '' : ' Installing it needs a Python 3.11 interpreter.'),
          });
          return;
        }
        log.info(`interpreter ${python.path} (${python.source}): Python ${info.version.join('.')}, all packages present`);
        resolve({ ok: true, missing: [], canInstall: false });
      } catch (e) {
        resolve({ ok: false, missing: [], canInstall: false, problem: `Could not read the interpreter check's output: ${String(e)}` });
      }
    });
  });
}

/** Shows the notification with its fixes: install into this interpreter, or choose another. */
export async function offerFix(
  python: Interpreter,
  result: CheckResult,
  extensionPath: string,
  onInstalled: () => void,
  folderName?: string,
): Promise<void> {
  const install = 'Install in this interpreter';
  const choose = 'Choose interpreter';
  const actions = result.canInstall ? [install, choose] : [choose];
  const where = folderName ? ` (folder ${folderName})` : '';
  const picked = await vscode.window.showWarningMessage(`Torch-MLIR Lens${where}: ${result.problem}`, ...actions);
  if (picked === install) {
    // The package's own pins (torch, torch-mlir, pygls) come with it.
    runInstall(python, extensionPath, onInstalled);
  } else if (picked === choose) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'torchMlirLens.python');
  }
}

/**
 * A target needs a package the server's interpreter lacks (the server's `missingDependency`:
 * IREE for the IREE targets): say what, and offer to install this extension's package with
 * that extra (`<package>[iree]`) into the interpreter, in a terminal.
 */
export async function offerExtra(python: Interpreter, missing: MissingDependencyParams, extensionPath: string, onInstalled: () => void): Promise<void> {
  const install = `Install torch-mlir-lens[${missing.extra}]`;
  const picked = await vscode.window.showWarningMessage(`Torch-MLIR Lens: ${missing.message}`, install, 'Show Output');
  if (picked === install) {
    runInstall(python, `${extensionPath}[${missing.extra}]`, onInstalled);
  } else if (picked === 'Show Output') {
    await vscode.commands.executeCommand('torchMlirLens.showOutput');
  }
}

/** `pip install <what>` into the interpreter, in a terminal; offers a restart once it is done. */
function runInstall(python: Interpreter, what: string, onInstalled: () => void): void {
  const terminal = vscode.window.createTerminal({ name: 'Torch-MLIR Lens: install' });
  terminal.show();
  terminal.sendText(`${shellQuote(python.path)} -m pip install ${shellQuote(what)}`);
  const closed = vscode.window.onDidCloseTerminal((t) => {
    if (t === terminal) {
      closed.dispose();
      onInstalled();
    }
  });
  void vscode.window
    .showInformationMessage('Torch-MLIR Lens: when the install has finished, restart the server.', 'Restart Server')
    .then((a) => a && onInstalled());
}

function shellQuote(s: string): string {
  if (process.platform === 'win32') return `"${s}"`;
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

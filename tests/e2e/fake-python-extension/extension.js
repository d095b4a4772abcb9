// A test-only stand-in for the Python extension (ms-python.python), which the offline end-to-end
// VS Code cannot install (no marketplace). It is NOT the Python extension: it implements only
// the part of its published API (`@vscode/python-extension`, out/main.d.ts) that Torch-MLIR Lens
// uses, with the same shapes, so the test can drive the client's real code path:
//   exports.ready                                   resolved once active
//   exports.environments.getActiveEnvironmentPath(resource?) → {id, path}
//   exports.environments.resolveEnvironment(env | path)      → ResolvedEnvironment | undefined
//   exports.environments.onDidChangeActiveEnvironmentPath    Event<{id, path, resource}>
//   exports.environments.updateActiveEnvironmentPath(env, resource?)
// A folder's interpreter is its `python.defaultInterpreterPath` (as the real setting: folder,
// then workspace) until one is selected. The e2e selects one with the command
// `fakePython.setInterpreter(folderUri | undefined, path)`, which fires
// onDidChangeActiveEnvironmentPath for that folder, as selecting an interpreter does in the
// real extension. No environment discovery, no persistence, no debug API.

const { execFile } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const vscode = require('vscode');

/** Asks the interpreter itself what the real extension reports after resolving it. */
const PROBE = 'import json, sys; print(json.dumps([sys.prefix, list(sys.version_info[:3]), sys.version]))';

/** Selected interpreters: workspace folder URI (or '' for no folder) → executable path. */
const selected = new Map();
const changed = new vscode.EventEmitter();

/** The workspace folder of a `Resource` (a Uri of a file or folder, or a WorkspaceFolder). */
function folderOf(resource) {
  if (!resource) return undefined;
  if (resource.uri && typeof resource.index === 'number') return resource;
  return vscode.workspace.getWorkspaceFolder(resource);
}

function environmentPath(p) {
  return { id: p, path: p };
}

function getActiveEnvironmentPath(resource) {
  const folder = folderOf(resource);
  const key = folder ? folder.uri.toString() : '';
  const chosen = selected.get(key) ?? vscode.workspace.getConfiguration('python', folder ?? null).get('defaultInterpreterPath', 'python3');
  return environmentPath(chosen);
}

function resolveEnvironment(environment) {
  const given = typeof environment === 'string' ? environment : environment?.path;
  if (!given) return Promise.resolve(undefined);
  // An environment folder stands for its interpreter.
  const exe = fs.existsSync(given) && fs.statSync(given).isDirectory() ? path.join(given, 'bin', 'python') : given;
  return new Promise((resolve) => {
    execFile(exe, ['-c', PROBE], { timeout: 30_000 }, (err, stdout) => {
      if (err) return resolve(undefined); // the real API: undefined for an invalid environment
      try {
        const [sysPrefix, [major, minor, micro], sysVersion] = JSON.parse(stdout);
        resolve({
          id: given,
          path: given,
          executable: { uri: vscode.Uri.file(exe), bitness: '64-bit', sysPrefix },
          environment: {
            type: 'VirtualEnvironment',
            name: path.basename(sysPrefix),
            folderUri: vscode.Uri.file(sysPrefix),
            workspaceFolder: undefined,
          },
          version: { major, minor, micro, release: { level: 'final', serial: 0 }, sysVersion },
          tools: ['Venv'],
        });
      } catch {
        resolve(undefined);
      }
    });
  });
}

async function updateActiveEnvironmentPath(environment, resource) {
  const p = typeof environment === 'string' ? environment : environment.path;
  const folder = folderOf(resource);
  selected.set(folder ? folder.uri.toString() : '', p);
  changed.fire({ ...environmentPath(p), resource: folder });
}

function activate(context) {
  context.subscriptions.push(
    changed,
    vscode.commands.registerCommand('fakePython.setInterpreter', (folderUri, interpreter) =>
      updateActiveEnvironmentPath(interpreter, folderUri ? vscode.Uri.parse(folderUri) : undefined),
    ),
  );
  return {
    ready: Promise.resolve(),
    environments: {
      getActiveEnvironmentPath,
      resolveEnvironment,
      updateActiveEnvironmentPath,
      onDidChangeActiveEnvironmentPath: changed.event,
    },
  };
}

module.exports = { activate };

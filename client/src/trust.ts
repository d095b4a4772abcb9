// Workspace trust. Untrusted: the server is told at start (`initializationOptions.trusted`) and
// runs no user code; when the user grants trust, the running server is told at once
// (`torchMlirLens/setTrusted`), so lowering starts without a reload.

import * as vscode from 'vscode';

export function isTrusted(): boolean {
  return vscode.workspace.isTrusted;
}

export function onTrustGranted(listener: () => void): vscode.Disposable {
  return vscode.workspace.onDidGrantWorkspaceTrust(listener);
}

// Workspace trust. Untrusted: each server is told at start (`initializationOptions.trusted`) and
// runs no user code; when the user grants trust, the running servers are told at once
// (`torchMlirLens/setTrusted`), so lowering starts without a reload.
//
// Tests (extension test mode only) can start from "untrusted" and grant trust at a chosen
// moment: `simulateUntrusted()` then `grant()` fires the same listeners as VS Code's grant.

import * as vscode from 'vscode';

export class Trust implements vscode.Disposable {
  private simulatedUntrusted = false;
  private readonly grantEmitter = new vscode.EventEmitter<void>();
  /** Trust was granted (by the user, or by a test's `grant()`). */
  readonly onGranted = this.grantEmitter.event;
  private readonly subscription = vscode.workspace.onDidGrantWorkspaceTrust(() => this.grantEmitter.fire());

  get trusted(): boolean {
    return vscode.workspace.isTrusted && !this.simulatedUntrusted;
  }

  /** Test hook: behave as an untrusted workspace until `grant()`. */
  simulateUntrusted(): void {
    this.simulatedUntrusted = true;
  }

  /** Test hook: end `simulateUntrusted()` as a user's grant would. */
  grant(): void {
    if (!this.simulatedUntrusted) return;
    this.simulatedUntrusted = false;
    this.grantEmitter.fire();
  }

  dispose(): void {
    this.subscription.dispose();
    this.grantEmitter.dispose();
  }
}

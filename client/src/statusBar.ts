// One status bar item for the state of the active editor's server (from `torchMlirLens/status`
// and the client's own life cycle); in a multi-root workspace it names the folder. Clicking it
// opens that server's output.

import * as vscode from 'vscode';
import type { ServerState } from './protocol';

export type ClientState = ServerState | 'stopped' | 'missing';

const LOOK: Record<ClientState, { icon: string; text: string; tip: string }> = {
  starting: { icon: '$(loading~spin)', text: 'starting', tip: 'The server is starting its lowering worker.' },
  ready: { icon: '$(check)', text: 'ready', tip: 'Ready.' },
  lowering: { icon: '$(sync~spin)', text: 'lowering', tip: 'Lowering.' },
  error: { icon: '$(error)', text: 'error', tip: 'The server reported an error.' },
  untrusted: {
    icon: '$(shield)',
    text: 'restricted',
    tip: 'This workspace is not trusted: no user code runs, so there is no IR, hover or diagnostic. Trust the workspace to enable them.',
  },
  stopped: { icon: '$(debug-stop)', text: 'stopped', tip: 'The server is not running.' },
  missing: { icon: '$(warning)', text: 'server missing', tip: 'The Python interpreter lacks the server.' },
};

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('torchMlirLens.status', vscode.StatusBarAlignment.Left, 10);
  state: ClientState = 'starting';

  constructor() {
    this.item.name = 'Torch-MLIR Lens';
    this.item.command = 'torchMlirLens.showOutput';
    this.set('starting');
    this.item.show();
  }

  /** Folder shown, e.g. "alpha" (multi-root workspaces), plus the interpreter for the tooltip. */
  private where = '';
  private interpreter = '';

  /** Which server the item shows: its folder's name ('' in a single-folder workspace) and interpreter. */
  showing(folderLabel: string, interpreter?: string): void {
    this.where = folderLabel;
    this.interpreter = interpreter ?? '';
  }

  set(state: ClientState, detail?: string): void {
    this.state = state;
    const look = LOOK[state] ?? LOOK.error;
    // "lowering MLP" names the module; other states keep the bar short and put detail in the tip.
    const text = state === 'lowering' && detail ? (detail.startsWith('lowering') ? detail : `lowering ${detail}`) : look.text;
    const where = this.where ? ` (${this.where})` : '';
    this.item.text = `${look.icon} Torch-MLIR: ${text}${where}`;
    const python = this.interpreter ? `\nInterpreter: ${this.interpreter}` : '';
    this.item.tooltip = `Torch-MLIR Lens${where}: ${detail && state !== 'lowering' ? detail : look.tip}${python}\nClick to show the output.`;
    this.item.backgroundColor =
      state === 'error' || state === 'missing' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  /** What the item shows now (for the test report). */
  shown(): { text: string; tooltip: string } {
    const tip = this.item.tooltip;
    return { text: this.item.text, tooltip: typeof tip === 'string' ? tip : (tip?.value ?? '') };
  }

  dispose(): void {
    this.item.dispose();
  }
}

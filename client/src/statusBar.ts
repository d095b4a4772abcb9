// One status bar item for the server's state (from `torchMlirLens/status` and the client's own
// life cycle); clicking it opens the output channel.

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

  set(state: ClientState, detail?: string): void {
    this.state = state;
    const look = LOOK[state] ?? LOOK.error;
    // "lowering MLP" names the module; other states keep the bar short and put detail in the tip.
    const text = state === 'lowering' && detail ? (detail.startsWith('lowering') ? detail : `lowering ${detail}`) : look.text;
    this.item.text = `${look.icon} Torch-MLIR: ${text}`;
    this.item.tooltip = `Torch-MLIR Lens: ${detail && state !== 'lowering' ? detail : look.tip}\nClick to show the output.`;
    this.item.backgroundColor =
      state === 'error' || state === 'missing' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}

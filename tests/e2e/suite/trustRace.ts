// Trust granted while the server is (re)starting, at every step of the start-up, several times:
// it must always end with a running, trusted server that gives lenses, and at the end the IR
// hover. The grant goes through the same path as the user's (Trust.grant fires the listeners
// of VS Code's onDidGrantWorkspaceTrust); only the starting "untrusted" is simulated.

import * as vscode from 'vscode';
import type { Phase } from '../../../client/src/folderServer';
import { extensionApi, hoverText, lensTitles, lineOf, waitFor } from './common';

const PHASES: Phase[] = ['stopping', 'interpreter', 'check', 'spawn', 'initialized', 'ready'];
// One round in `make test` (six grants); more by hand: TML_E2E_TRUST_ROUNDS=5.
const ROUNDS = Number(process.env.TML_E2E_TRUST_ROUNDS ?? 1);

export async function trustRace(doc: vscode.TextDocument): Promise<string> {
  const api = await extensionApi();
  const server = api.client.serverFor(doc.uri);
  const seen: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const phase of PHASES) {
      api.trust.simulateUntrusted();
      let granted = false;
      const sub = server.onPhase((p) => {
        if (p === phase && !granted) {
          granted = true;
          api.trust.grant(); // right at this step of the start
        }
      });
      try {
        await server.restart();
        await waitFor(`the grant at "${phase}"`, 30_000, async () => (granted ? true : undefined));
        const info = await waitFor(`a trusted server after a grant at "${phase}"`, 60_000, async () => {
          const i = await api.client.request<{ trusted: boolean }>('torchMlirLens/serverInfo', { uri: doc.uri.toString(), waitForWorker: false });
          return i.trusted ? i : undefined;
        });
        const titles = await waitFor(`lenses after a grant at "${phase}"`, 60_000, async () => {
          const t = await lensTitles(doc.uri);
          return t.includes('Show Linalg IR') ? t : undefined;
        });
        if (!server.running || ['error', 'stopped', 'missing'].includes(server.state)) {
          throw new Error(`server not running after a grant at "${phase}" (state ${server.state}: ${server.detail})`);
        }
        // One server for the folder: a second, orphaned one would double every lens.
        const linalgLenses = titles.filter((t) => t === 'Show Linalg IR').length;
        if (linalgLenses !== 1) throw new Error(`${linalgLenses} "Show Linalg IR" lenses after a grant at "${phase}"`);
        seen.push(`${phase}:${info.trusted ? 'trusted' : '?'}+${titles.length} lenses`);
      } finally {
        sub.dispose();
        api.trust.grant(); // never leave the simulation on
      }
    }
  }
  // The last server lowers: the IR hover proves the grant reached its worker.
  const line = lineOf(doc, 'F.relu(self.fc1(x))');
  const pos = new vscode.Position(line, doc.lineAt(line).firstNonWhitespaceCharacterIndex + 4);
  await waitFor('a hover with MLIR after the trust race', 150_000, async () => {
    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', doc.uri, pos);
    const t = hoverText(hovers ?? []);
    return t.includes('```mlir') ? t : undefined;
  });
  return `${seen.length} grants mid-start, all ended trusted with lenses and IR: ${seen.join(' ')}`;
}

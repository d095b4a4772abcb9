// A `LensClient` in the fake window (fakes/vscode.ts) whose servers start no process: their
// life cycle and requests are recorded per server instead. A recorded start or restart takes
// the interpreter a real one would (`resolveInterpreter`), since routing decides on it.

import { mock } from 'node:test';
import * as vscode from 'vscode';
import { FolderServer } from '../../client/src/folderServer';
import { resolveInterpreter } from '../../client/src/interpreter';
import { LensClient } from '../../client/src/languageClient';
import { StatusBar } from '../../client/src/statusBar';
import { Trust } from '../../client/src/trust';
import { fake } from './fakes/vscode';

/** A call made on a server: which server (its label: folder name or "no folder"), what, with what. */
export interface Call {
  server: string;
  method: 'start' | 'restart' | 'settingsChanged' | 'request' | 'command' | 'dispose';
  args: unknown[];
}

export interface Harness {
  client: LensClient;
  calls: Call[];
  /** Labels of the servers `method` was called on, in order, once each. */
  on(method: Call['method']): string[];
  /** Forgets the calls so far. */
  clear(): void;
  dispose(): void;
}

/**
 * Lets the client's pending work (promise chains started by an event) finish: a few turns of
 * the event loop, no timers; the fake answers every call at once.
 */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
}

/**
 * Records server life cycles and requests (restored with `mock.restoreAll`). As the real
 * `ensureStarted`, a start of a server that runs does nothing (and is not recorded).
 */
function stubServers(calls: Call[]): void {
  const record = (server: FolderServer, method: Call['method'], args: unknown[]) => calls.push({ server: server.label, method, args });
  const running = new WeakSet<FolderServer>();
  mock.method(FolderServer.prototype, 'ensureStarted', async function (this: FolderServer): Promise<void> {
    if (running.has(this)) return;
    running.add(this);
    record(this, 'start', []);
    this.interpreter = await resolveInterpreter(this.folder?.uri);
  });
  mock.method(FolderServer.prototype, 'restart', async function (this: FolderServer): Promise<void> {
    running.add(this);
    record(this, 'restart', []);
    this.interpreter = await resolveInterpreter(this.folder?.uri);
  });
  mock.method(FolderServer.prototype, 'settingsChanged', function (this: FolderServer) {
    record(this, 'settingsChanged', []);
  });
  mock.method(FolderServer.prototype, 'request', async function (this: FolderServer, method: string, params: unknown) {
    record(this, 'request', [method, params]);
    return { answeredBy: this.label };
  });
  mock.method(FolderServer.prototype, 'executeServerCommand', async function (this: FolderServer, command: string, args: unknown[]) {
    record(this, 'command', [command, ...args]);
    return { answeredBy: this.label };
  });
  const dispose = FolderServer.prototype.dispose;
  mock.method(FolderServer.prototype, 'dispose', function (this: FolderServer) {
    running.delete(this);
    record(this, 'dispose', []);
    return dispose.call(this);
  });
}

/** A client on the fake window as it is now (set its folders first), its servers stubbed. */
export async function harness(): Promise<Harness> {
  const calls: Call[] = [];
  stubServers(calls);
  const context = { extensionPath: '/extension', subscriptions: [] } as unknown as vscode.ExtensionContext;
  const log = vscode.window.createOutputChannel('Torch-MLIR Lens', { log: true });
  const status = new StatusBar();
  const trust = new Trust();
  const client = new LensClient(context, log, status, trust);
  await settle(); // it subscribes to the Python extension's events asynchronously
  return {
    client,
    calls,
    on: (method) => [...new Set(calls.filter((c) => c.method === method).map((c) => c.server))],
    clear: () => calls.splice(0),
    dispose: () => {
      client.dispose();
      status.dispose();
      trust.dispose();
      mock.restoreAll();
      fake.reset();
    },
  };
}

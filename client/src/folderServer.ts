// One language server (`python -m torch_mlir_lens serve`) for one workspace folder, or for the
// files outside every folder: its own interpreter, settings and output.
//
// Start, stop, restart and trust changes run one at a time through a queue: a trust grant
// during start-up waits for the start to finish, two restarts never overlap, and a trust
// notification that cannot be delivered restarts the server (which then starts trusted).

import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type ConfigurationParams,
  type LanguageClientOptions,
  type Middleware,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { documentSelector } from './documentScope';
import { resolveInterpreter, type Interpreter } from './interpreter';
import { SERVER_ARGS } from './launch';
import { MissingDependencyNotification, SetTrustedNotification, StatusNotification } from './protocol';
import { checkInterpreter, offerExtra, offerFix } from './serverCheck';
import { serverSettings } from './settings';
import type { ClientState } from './statusBar';
import type { Trust } from './trust';

/** Steps of a start (and the stop of a restart), in order; tests act at each of them. */
export type Phase = 'stopping' | 'interpreter' | 'check' | 'spawn' | 'initialized' | 'ready';

export interface FolderServerOptions {
  key: string;
  folder: vscode.WorkspaceFolder | undefined;
  /** Working directory of the server (and of its worker): a neutral folder, never the workspace. */
  cwd: string | undefined;
  log: vscode.LogOutputChannel;
  trust: Trust;
  extensionPath: string;
  /** Whether this server owns a document (the pool decides; see documentScope.ts). */
  owns: (uri: vscode.Uri) => boolean;
}

export class FolderServer implements vscode.Disposable {
  readonly key: string;
  readonly folder: vscode.WorkspaceFolder | undefined;
  readonly log: vscode.LogOutputChannel;
  private client: LanguageClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private startQueued: Promise<void> | undefined;
  private restartQueued: Promise<void> | undefined;
  private disposed = false;
  private notifiedFor: string | undefined;
  state: ClientState = 'stopped';
  detail: string | undefined;
  interpreter: Interpreter | undefined;

  private readonly phaseEmitter = new vscode.EventEmitter<Phase>();
  /** Fires at each step of a start or restart (synchronously, before the step runs). */
  readonly onPhase = this.phaseEmitter.event;
  private readonly stateEmitter = new vscode.EventEmitter<void>();
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly readyEmitter = new vscode.EventEmitter<void>();
  /** A (re)started server is ready for requests. */
  readonly onReady = this.readyEmitter.event;

  constructor(private readonly options: FolderServerOptions) {
    this.key = options.key;
    this.folder = options.folder;
    this.log = options.log;
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** Human name: the folder's, or "no folder" for the default server. */
  get label(): string {
    return this.folder?.name ?? 'no folder';
  }

  /** The commands the running server advertises (workspace/executeCommand). */
  serverCommands(): string[] {
    return this.client?.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
  }

  hasServerCommand(command: string): boolean {
    return this.serverCommands().includes(command);
  }

  /** Starts the server unless it runs or a start is already queued. */
  ensureStarted(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.startQueued ??= this.enqueue(async () => {
      this.startQueued = undefined;
      if (this.running) return;
      await this.doStop(); // a failed or crashed client first
      await this.doStart();
    });
    return this.startQueued;
  }

  /** Restarts the server; restarts asked for while one is waiting in the queue share it. */
  restart(): Promise<void> {
    this.restartQueued ??= this.enqueue(async () => {
      this.restartQueued = undefined;
      this.notifiedFor = undefined; // ask again about a missing server
      this.log.info(`restarting the server for ${this.label}`);
      await this.doStop();
      await this.doStart();
    });
    return this.restartQueued;
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  /** The workspace became trusted (or not): tell the running server, after any start in progress. */
  setTrusted(trusted: boolean): Promise<void> {
    return this.enqueue(async () => {
      if (!this.client) return; // never started: it reads the trust when it starts
      if (this.running) {
        try {
          await this.client.sendNotification(SetTrustedNotification, { trusted, folders: this.trustedFolders() });
          return;
        } catch (e) {
          this.log.warn(`could not tell the server about workspace trust (${String(e)}): restarting it`);
        }
      }
      await this.doStop();
      await this.doStart();
    });
  }

  /**
   * Trust is per folder on the server: a folder's server trusts its folder only (a folder
   * added to the window later gets a server of its own, started with the trust of that
   * moment); the server for files outside every folder trusts the folders of the files VS
   * Code opens in it (VS Code asks about each such file as it is opened), never others.
   */
  private trustedFolders(): string[] {
    return this.folder ? [this.folder.uri.toString()] : [];
  }

  private trustOptions(trusted: boolean): { trusted: boolean; trustedFolders: string[]; trustOpenedDocuments: boolean } {
    return { trusted, trustedFolders: trusted ? this.trustedFolders() : [], trustOpenedDocuments: !this.folder };
  }

  async request<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R> {
    if (!this.running) {
      await this.ensureStarted();
      if (!this.running) throw new Error(`the Torch-MLIR Lens server for ${this.label} is not running (${this.detail ?? 'see its output'})`);
    }
    // An explicit `undefined` token would be sent as a second by-position parameter.
    return token ? this.client!.sendRequest<R>(method, params, token) : this.client!.sendRequest<R>(method, params);
  }

  /** Drops the diagnostics this server published for `uri` (a view of it closed). */
  forgetDiagnostics(uri: vscode.Uri): void {
    this.client?.diagnostics?.delete(uri);
  }

  executeServerCommand<R>(command: string, args: unknown[]): Promise<R> {
    return this.request<R>(ExecuteCommandRequest.method, { command, arguments: args });
  }

  /** Settings other than the interpreter changed: the server pulls them again. */
  settingsChanged(): void {
    if (this.running) void this.client?.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    const run = this.queue.then(() => (this.disposed ? undefined : op()));
    this.queue = run.catch((e) => this.log.error(`server life cycle: ${String(e)}`));
    return run;
  }

  private setState(state: ClientState, detail?: string): void {
    this.state = state;
    this.detail = detail;
    this.stateEmitter.fire();
  }

  private phase(p: Phase): void {
    this.phaseEmitter.fire(p);
  }

  private async doStart(): Promise<void> {
    this.phase('interpreter');
    this.setState('starting', 'Checking the Python interpreter.');
    const resource = this.folder?.uri;
    const python = await resolveInterpreter(resource);
    this.interpreter = python;
    this.log.info(`${this.label}: interpreter ${python.path} (from ${python.source})`);
    this.phase('check');
    const check = await checkInterpreter(python, this.log);
    if (!check.ok) {
      this.setState('missing', check.problem);
      this.log.error(check.problem ?? 'interpreter check failed');
      // Once per interpreter: later requests retry quietly; Restart Server asks again.
      if (this.notifiedFor !== python.path) {
        this.notifiedFor = python.path;
        void offerFix(python, check, this.options.extensionPath, () => void this.restart(), this.folder?.name);
      }
      return;
    }
    this.notifiedFor = undefined;

    const trusted = this.options.trust.trusted;
    // Nothing of the workspace is importable by the server or its worker (launch.ts).
    const serverOptions: ServerOptions = {
      command: python.path,
      args: SERVER_ARGS,
      options: { cwd: this.options.cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: documentSelector(),
      workspaceFolder: this.folder,
      outputChannel: this.log,
      // One collection per server: their names must differ.
      diagnosticCollectionName: this.folder ? `torchMlirLens.${this.folder.index}.${this.folder.name}` : 'torchMlirLens',
      initializationOptions: { ...this.trustOptions(trusted), settings: serverSettings(resource) },
      middleware: this.middleware(),
    };
    const name = this.folder ? `Torch-MLIR Lens (${this.folder.name})` : 'Torch-MLIR Lens';
    const client = new LanguageClient('torchMlirLens', name, serverOptions, clientOptions);
    // Every folder's server offers the same commands; VS Code allows one handler per command
    // id, so the pool registers them once and routes each call to the document's server.
    const commands = client.getFeature(ExecuteCommandRequest.method);
    commands.register = () => undefined;
    this.client = client;
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.setState('stopped', 'The server stopped; see the output. Run "Torch-MLIR Lens: Restart Server" to start it again.');
      }
    });
    let heard = false; // the server's own status wins over our guess below
    client.onNotification(StatusNotification, (p) => {
      heard = true;
      this.setState(p.state, p.detail ?? undefined);
    });
    // A target's compiler (IREE) is not installed: offer it (the server says so once).
    client.onNotification(MissingDependencyNotification, (p) => {
      this.log.warn(p.message);
      void offerExtra(python, p, this.options.extensionPath, () => void this.restart());
    });
    this.phase('spawn');
    try {
      await client.start();
    } catch (e) {
      this.setState('error', `The server failed to start: ${String(e)}`);
      this.log.error(`server failed to start: ${String(e)}`);
      return;
    }
    this.phase('initialized');
    if (!heard) this.setState(trusted ? 'ready' : 'untrusted');
    this.phase('ready');
    this.readyEmitter.fire();
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    this.phase('stopping');
    try {
      if (client.isRunning()) await client.stop(5000);
    } catch (e) {
      this.log.warn(`stopping the server: ${String(e)}`);
    }
    await client.dispose().catch(() => undefined);
    this.setState('stopped');
  }

  /** Only this server's documents reach it; its settings are its folder's. */
  private middleware(): Middleware {
    const owns = (doc: vscode.TextDocument) => this.options.owns(doc.uri);
    const folderUri = this.folder?.uri.toString();
    return {
      didOpen: (doc, next) => (owns(doc) ? next(doc) : Promise.resolve()),
      didChange: (e, next) => (owns(e.document) ? next(e) : Promise.resolve()),
      didSave: (doc, next) => (owns(doc) ? next(doc) : Promise.resolve()),
      didClose: (doc, next) => (owns(doc) ? next(doc) : Promise.resolve()),
      provideHover: (doc, pos, token, next) => (owns(doc) ? next(doc, pos, token) : undefined),
      provideCodeLenses: (doc, token, next) => (owns(doc) ? next(doc, token) : []),
      provideCodeActions: (doc, range, ctx, token, next) => (owns(doc) ? next(doc, range, ctx, token) : []),
      workspace: {
        // The server asks for its settings without a scope: answer with its folder's.
        configuration: (params: ConfigurationParams, token, next) =>
          next(folderUri ? { items: params.items.map((i) => ({ ...i, scopeUri: i.scopeUri ?? folderUri })) } : params, token),
      },
    };
  }

  async dispose(): Promise<void> {
    await this.stop().catch(() => undefined);
    this.disposed = true;
    this.phaseEmitter.dispose();
    this.stateEmitter.dispose();
    this.readyEmitter.dispose();
  }
}

// The servers of the window: one per workspace folder (as vscode-mlir keeps one client per
// folder) plus a default one for files outside every folder and untitled files. A folder's
// server starts when its first Python file opens and stops when the folder is removed.
// Everything that talks to a server goes through `LensClient`, which routes by document.

import * as vscode from 'vscode';
import { DEFAULT_KEY, folderOf, isServed, keyOfFolder, ownerKey } from './documentScope';
import { FolderServer } from './folderServer';
import { neutralDirectory } from './launch';
import { onDidChangePythonInterpreter, resolveInterpreter } from './interpreter';
import { SERVER_COMMANDS } from './protocol';
import { SECTION } from './settings';
import type { StatusBar } from './statusBar';
import type { Trust } from './trust';

/** Server commands the client completes interactively when their arguments are incomplete. */
export type CommandInterceptor = (args: unknown[]) => Promise<boolean>;

/** Python extension interpreter events come in bursts (discovery, selection): wait this long. */
const INTERPRETER_DEBOUNCE_MS = 1000;

/** A resource in no workspace folder: its settings are the workspace's (and the user's). */
const OUTSIDE_EVERY_FOLDER = vscode.Uri.parse('untitled:torch-mlir-lens');

export class LensClient implements vscode.Disposable {
  private readonly servers = new Map<string, FolderServer>();
  private readonly folderLogs = new Map<string, vscode.LogOutputChannel>();
  /** Which server each open document was given to, to move documents when folders change. */
  private readonly assigned = new Map<string, string>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly readyEmitter = new vscode.EventEmitter<void>();
  /** Fires each time a (re)started server is ready for requests. */
  readonly onReady = this.readyEmitter.event;
  private readonly serversEmitter = new vscode.EventEmitter<void>();
  /** A server was added or removed, or changed state. */
  readonly onDidChangeServers = this.serversEmitter.event;
  private readonly interceptors = new Map<string, CommandInterceptor>();
  private readonly registeredCommands = new Set<string>();
  private readonly interpreterTimers = new Map<string, NodeJS.Timeout>();
  /** Maps an IR pane's URI to its source document's URI (set by the panes). */
  sourceOf: (uri: vscode.Uri) => string | undefined = () => undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    /** The client's own log (and the single-folder server's output). */
    readonly log: vscode.LogOutputChannel,
    private readonly status: StatusBar,
    private readonly trust: Trust,
  ) {
    this.disposables.push(
      vscode.workspace.onDidOpenTextDocument((doc) => this.opened(doc)),
      vscode.workspace.onDidCloseTextDocument((doc) => this.assigned.delete(doc.uri.toString())),
      vscode.workspace.onDidChangeWorkspaceFolders((e) => void this.foldersChanged(e)),
      vscode.workspace.onDidChangeConfiguration((e) => this.configurationChanged(e)),
      vscode.window.onDidChangeActiveTextEditor(() => this.showStatus()),
    );
    this.registerServerCommands(Object.values(SERVER_COMMANDS));
    void onDidChangePythonInterpreter((folder) => this.interpreterChanged(folder)).then((d) => this.disposables.push(d));
  }

  /** Serves the Python documents already open (activation); others start their server on open. */
  async start(): Promise<void> {
    for (const doc of vscode.workspace.textDocuments) this.opened(doc);
    this.showStatus();
    await Promise.all([...this.servers.values()].map((s) => s.ensureStarted()));
  }

  /** The servers that exist, for status and tests. */
  all(): FolderServer[] {
    return [...this.servers.values()];
  }

  /** The server for a document (created, not started, when needed). */
  serverFor(uri: vscode.Uri | string): FolderServer {
    const u = typeof uri === 'string' ? vscode.Uri.parse(uri) : uri;
    const folder = folderOf(u);
    const key = keyOfFolder(folder);
    let server = this.servers.get(key);
    if (!server) {
      server = new FolderServer({
        key,
        folder,
        cwd: neutralDirectory(),
        log: this.logFor(folder),
        trust: this.trust,
        extensionPath: this.context.extensionPath,
        owns: (doc) => ownerKey(doc) === key,
      });
      const s = server;
      s.onDidChangeState(() => {
        if (s === this.activeServer()) this.showStatus();
        this.serversEmitter.fire();
      });
      s.onReady(() => {
        this.registerServerCommands(s.serverCommands());
        this.readyEmitter.fire();
      });
      this.servers.set(key, server);
      this.serversEmitter.fire();
    }
    return server;
  }

  /** The server of the active editor's document (an IR pane counts as its source). */
  activeServer(): FolderServer | undefined {
    const uri = this.activeDocument();
    return uri ? this.servers.get(ownerKey(uri)) : undefined;
  }

  /** The active editor's server is running. */
  get running(): boolean {
    return this.activeServer()?.running ?? false;
  }

  /** The active editor's server (or any running one) advertises this command. */
  hasServerCommand(command: string): boolean {
    const active = this.activeServer();
    return active ? active.hasServerCommand(command) : this.all().some((s) => s.hasServerCommand(command));
  }

  /** When the server's `command` is invoked (e.g. by a code lens), `fn` may handle it instead. */
  intercept(command: string, fn: CommandInterceptor): void {
    this.interceptors.set(command, fn);
  }

  /** A request about a document (`params.uri`) goes to that document's server. */
  request<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R> {
    return this.routeTo(uriIn(params)).request<R>(method, params, token);
  }

  /** Drops the diagnostics the document's server published for it (an ONNX model's view closed). */
  forgetDiagnostics(uri: vscode.Uri): void {
    this.servers.get(ownerKey(uri))?.forgetDiagnostics(uri);
  }

  /** workspace/executeCommand straight to the server of `args[0].uri` (bypassing the interceptors). */
  executeServerCommand<R>(command: string, args: unknown[]): Promise<R> {
    return this.routeTo(uriIn(args[0])).executeServerCommand<R>(command, args);
  }

  /** "Restart Server": the active editor's server, else every server. */
  async restart(): Promise<void> {
    const active = this.activeServer();
    if (active) await active.restart();
    else await Promise.all(this.all().map((s) => s.restart()));
  }

  /** Output of the active editor's server. */
  showOutput(): void {
    (this.activeServer()?.log ?? this.log).show();
  }

  /** Workspace trust changed: every server, each after its own start in progress. */
  async setTrusted(trusted: boolean): Promise<void> {
    await Promise.all(this.all().map((s) => s.setTrusted(trusted)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.all().map((s) => s.stop()));
  }

  private routeTo(uri: string | undefined): FolderServer {
    if (uri) return this.serverFor(uri);
    const active = this.activeServer();
    if (active) return active;
    const doc = this.activeDocument();
    return this.serverFor(doc ?? vscode.workspace.workspaceFolders?.[0]?.uri ?? OUTSIDE_EVERY_FOLDER);
  }

  private activeDocument(): vscode.Uri | undefined {
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc) return undefined;
    if (isServed(doc)) return doc.uri;
    const source = this.sourceOf(doc.uri);
    return source ? vscode.Uri.parse(source) : undefined;
  }

  /** One handler per server command for all folders; each call goes to its document's server. */
  private registerServerCommands(commands: readonly string[]): void {
    for (const command of commands) {
      if (this.registeredCommands.has(command)) continue;
      this.registeredCommands.add(command);
      this.disposables.push(vscode.commands.registerCommand(command, (...args: unknown[]) => this.serverCommand(command, args)));
    }
  }

  private async serverCommand(command: string, args: unknown[]): Promise<unknown> {
    const fn = this.interceptors.get(command);
    if (fn && (await fn(args))) return undefined;
    return this.executeServerCommand(command, args);
  }

  private opened(doc: vscode.TextDocument): void {
    if (!isServed(doc)) return;
    const server = this.serverFor(doc.uri);
    this.assigned.set(doc.uri.toString(), server.key);
    void server.ensureStarted();
  }

  /** Removed folders' servers stop; documents whose owner changed move to their new server. */
  private async foldersChanged(e: vscode.WorkspaceFoldersChangeEvent): Promise<void> {
    for (const folder of e.removed) {
      const key = keyOfFolder(folder);
      const server = this.servers.get(key);
      this.servers.delete(key);
      if (server) {
        this.log.info(`folder ${folder.name} removed: stopping its server`);
        await server.dispose();
      }
      this.folderLogs.get(key)?.dispose();
      this.folderLogs.delete(key);
    }
    const restart = new Set<string>();
    for (const [uri, oldKey] of this.assigned) {
      const newKey = ownerKey(vscode.Uri.parse(uri));
      if (newKey !== oldKey && this.servers.has(oldKey)) restart.add(oldKey); // it still holds the document
    }
    for (const key of restart) void this.servers.get(key)?.restart();
    for (const doc of vscode.workspace.textDocuments) this.opened(doc);
    this.serversEmitter.fire();
    this.showStatus();
  }

  private configurationChanged(e: vscode.ConfigurationChangeEvent): void {
    for (const server of this.all()) {
      // The default server's settings are the workspace's: a folder's own change is not its.
      const scope = server.folder?.uri ?? OUTSIDE_EVERY_FOLDER;
      if (e.affectsConfiguration(`${SECTION}.python`, scope)) void server.restart();
      else if (e.affectsConfiguration(SECTION, scope)) server.settingsChanged();
    }
  }

  /** The Python extension's interpreter changed: restart (debounced) the servers it affects. */
  private interpreterChanged(folder: vscode.WorkspaceFolder | undefined): void {
    for (const server of this.all()) {
      if (folder && server.folder?.uri.toString() !== folder.uri.toString()) continue;
      clearTimeout(this.interpreterTimers.get(server.key));
      this.interpreterTimers.set(
        server.key,
        setTimeout(() => {
          this.interpreterTimers.delete(server.key);
          void this.restartIfInterpreterChanged(server);
        }, INTERPRETER_DEBOUNCE_MS),
      );
    }
  }

  private async restartIfInterpreterChanged(server: FolderServer): Promise<void> {
    if (this.servers.get(server.key) !== server) return; // its folder was removed meanwhile
    const now = await resolveInterpreter(server.folder?.uri);
    if (now.path === server.interpreter?.path) return; // the setting wins, or nothing changed for it
    server.log.info(`interpreter changed to ${now.path}: restarting the server for ${server.label}`);
    await server.restart();
  }

  private showStatus(): void {
    const server = this.activeServer();
    if (!server) return; // keep showing the last server's state (e.g. while an output panel is focused)
    const multiRoot = (vscode.workspace.workspaceFolders?.length ?? 0) > 1;
    this.status.showing(multiRoot || server.key === DEFAULT_KEY ? server.label : '', server.interpreter?.path);
    this.status.set(server.state, server.detail);
  }

  /** A multi-root workspace gives each folder's server its own output; else they share ours. */
  private logFor(folder: vscode.WorkspaceFolder | undefined): vscode.LogOutputChannel {
    if ((vscode.workspace.workspaceFolders?.length ?? 0) <= 1) return this.log;
    const key = keyOfFolder(folder);
    let log = this.folderLogs.get(key);
    if (!log) {
      log = vscode.window.createOutputChannel(`Torch-MLIR Lens (${folder?.name ?? 'no folder'})`, { log: true });
      this.folderLogs.set(key, log);
    }
    return log;
  }

  dispose(): void {
    for (const t of this.interpreterTimers.values()) clearTimeout(t);
    for (const s of this.all()) void s.dispose();
    for (const l of this.folderLogs.values()) l.dispose();
    this.readyEmitter.dispose();
    this.serversEmitter.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** The document URI a request or command argument is about, if any. */
function uriIn(x: unknown): string | undefined {
  const uri = x && typeof x === 'object' ? (x as { uri?: unknown }).uri : undefined;
  return typeof uri === 'string' ? uri : undefined;
}

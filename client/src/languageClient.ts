// Starts, restarts and stops `python -m torch_mlir_lens serve` with vscode-languageclient.
// One client for the window; everything that talks to the server goes through `LensClient`.

import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { onDidChangePythonInterpreter, resolveInterpreter, type Interpreter } from './interpreter';
import { CELL_SELECTORS } from './notebookCells';
import { SET_TRUSTED, STATUS, type StatusParams } from './protocol';
import { checkInterpreter, offerFix } from './serverCheck';
import { SECTION, serverSettings } from './settings';
import type { StatusBar } from './statusBar';
import { isTrusted } from './trust';

/** Server commands the client completes interactively when their arguments are incomplete. */
export type CommandInterceptor = (args: unknown[]) => Promise<boolean>;

export class LensClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly readyEmitter = new vscode.EventEmitter<void>();
  /** Fires each time a (re)started server is ready for requests. */
  readonly onReady = this.readyEmitter.event;
  private readonly interceptors = new Map<string, CommandInterceptor>();
  interpreter: Interpreter | undefined;
  private notifiedFor: string | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly log: vscode.LogOutputChannel,
    private readonly status: StatusBar,
  ) {
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${SECTION}.python`)) {
          void this.restart();
        } else if (e.affectsConfiguration(SECTION) && this.running) {
          // The server pulls workspace/configuration again on this notification.
          void this.client?.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
        }
      }),
    );
    void onDidChangePythonInterpreter(() => {
      if (!vscode.workspace.getConfiguration(SECTION).get<string>('python')) void this.restart();
    }).then((d) => this.disposables.push(d));
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The server advertises this command (workspace/executeCommand). */
  hasServerCommand(command: string): boolean {
    return !!this.client?.initializeResult?.capabilities.executeCommandProvider?.commands.includes(command);
  }

  /** When the server's `command` is invoked (e.g. by a code lens), `fn` may handle it instead. */
  intercept(command: string, fn: CommandInterceptor): void {
    this.interceptors.set(command, fn);
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    this.status.set('starting', 'Checking the Python interpreter.');
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    const python = await resolveInterpreter(resource);
    this.interpreter = python;
    this.log.info(`interpreter: ${python.path} (from ${python.source})`);
    const check = await checkInterpreter(python, this.log);
    if (!check.ok) {
      this.status.set('missing', check.problem);
      this.log.error(check.problem ?? 'interpreter check failed');
      // Once per interpreter: later requests retry quietly; Restart Server asks again.
      if (this.notifiedFor !== python.path) {
        this.notifiedFor = python.path;
        void offerFix(python, check, this.context.extensionPath, () => void this.restart());
      }
      return;
    }
    this.notifiedFor = undefined;

    const serverOptions: ServerOptions = {
      command: python.path,
      args: ['-m', 'torch_mlir_lens', 'serve'],
      options: {
        cwd: resource?.fsPath,
        env: { ...process.env, PYTHONUNBUFFERED: '1' },
      },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'untitled', language: 'python' },
        ...CELL_SELECTORS, // notebook cells (synced through notebookDocument/*)
      ],
      outputChannel: this.log,
      initializationOptions: { trusted: isTrusted(), settings: serverSettings(resource) },
      middleware: {
        executeCommand: async (command, args, next) => {
          const fn = this.interceptors.get(command);
          if (fn && (await fn(args))) return undefined;
          return next(command, args);
        },
      },
    };
    const client = new LanguageClient('torchMlirLens', 'Torch-MLIR Lens', serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.status.set('stopped', 'The server stopped; see the output. Run "Torch-MLIR Lens: Restart Server" to start it again.');
      }
    });
    let heard = false; // the server's own status wins over our guess below
    client.onNotification(STATUS, (p: StatusParams) => {
      heard = true;
      this.status.set(p.state, p.detail);
    });
    try {
      await client.start();
    } catch (e) {
      this.status.set('error', `The server failed to start: ${String(e)}`);
      this.log.error(`server failed to start: ${String(e)}`);
      return;
    }
    if (!heard) this.status.set(isTrusted() ? 'ready' : 'untrusted');
    this.readyEmitter.fire();
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (e) {
        this.log.warn(`stopping the server: ${String(e)}`);
      }
      await client.dispose().catch(() => undefined);
    }
  }

  async restart(): Promise<void> {
    this.log.info('restarting the server');
    this.notifiedFor = undefined;
    await this.stop();
    await this.start();
  }

  /** The workspace became trusted: tell the running server, no restart needed. */
  async setTrusted(trusted: boolean): Promise<void> {
    if (this.running) await this.client?.sendNotification(SET_TRUSTED, { trusted });
    else await this.restart();
  }

  async request<R>(method: string, params: unknown, token?: vscode.CancellationToken): Promise<R> {
    if (!this.running) {
      await this.start();
      if (!this.running) throw new Error('the Torch-MLIR Lens server is not running (see its output)');
    }
    return this.client!.sendRequest<R>(method, params, token);
  }

  /** workspace/executeCommand straight to the server (bypassing the interceptors). */
  executeServerCommand<R>(command: string, args: unknown[]): Promise<R> {
    return this.request<R>(ExecuteCommandRequest.method, { command, arguments: args });
  }

  dispose(): void {
    void this.stop();
    this.readyEmitter.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

// A fake of the `vscode` module for unit tests of the client's routing, outside any editor.
// It implements only what the routing code (languageClient.ts, folderServer.ts,
// documentScope.ts, notebookCells.ts, interpreter.ts and what they construct) uses, with VS
// Code's semantics where the routing depends on them: `getWorkspaceFolder` answers the
// innermost folder holding a URI of the same scheme and authority, a command id can be
// registered once, an event fires its listeners in order. `fake` (below) is the tests' handle:
// folders, open documents and notebooks, the active editor, settings and the Python extension.
// register.ts makes `require('vscode')` load this module in the unit test run only.

import * as posix from 'node:path/posix';

// ---- values ---------------------------------------------------------------------------------

/** Percent-encodes one URI component, keeping '/' in paths (round-trips through `parse`). */
function encode(s: string, keepSlash: boolean): string {
  const e = encodeURIComponent(s);
  return keepSlash ? e.replace(/%2F/g, '/') : e;
}

interface UriParts {
  scheme: string;
  authority: string;
  path: string;
  query: string;
  fragment: string;
}

export class Uri {
  readonly scheme: string;
  readonly authority: string;
  readonly path: string;
  readonly query: string;
  readonly fragment: string;

  private constructor(p: UriParts) {
    this.scheme = p.scheme;
    this.authority = p.authority;
    this.path = p.path;
    this.query = p.query;
    this.fragment = p.fragment;
  }

  /** `scheme:[//authority]path[?query][#fragment]`, as VS Code parses it. */
  static parse(value: string): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!m) throw new Error(`fake vscode: not a URI: ${value}`);
    const [, scheme, authority = '', path, query = '', fragment = ''] = m;
    return new Uri({
      scheme,
      authority: decodeURIComponent(authority),
      path: decodeURIComponent(path),
      query: decodeURIComponent(query),
      fragment: decodeURIComponent(fragment),
    });
  }

  static file(fsPath: string): Uri {
    return new Uri({ scheme: 'file', authority: '', path: fsPath.startsWith('/') ? fsPath : `/${fsPath}`, query: '', fragment: '' });
  }

  static joinPath(base: Uri, ...segments: string[]): Uri {
    return base.with({ path: posix.join(base.path, ...segments) });
  }

  with(change: Partial<UriParts>): Uri {
    return new Uri({ ...this.parts(), ...change });
  }

  get fsPath(): string {
    return this.authority && this.scheme === 'file' ? `//${this.authority}${this.path}` : this.path;
  }

  toString(): string {
    const p = this.parts();
    const authority = p.authority || p.scheme === 'file' ? `//${encode(p.authority, false)}` : '';
    const query = p.query ? `?${encode(p.query, false)}` : '';
    const fragment = p.fragment ? `#${encode(p.fragment, false)}` : '';
    return `${p.scheme}:${authority}${encode(p.path, true)}${query}${fragment}`;
  }

  toJSON(): string {
    return this.toString();
  }

  private parts(): UriParts {
    return { scheme: this.scheme, authority: this.authority, path: this.path, query: this.query, fragment: this.fragment };
  }
}

export class Disposable {
  constructor(private readonly onDispose: () => void) {}

  dispose(): void {
    this.onDispose();
  }
}

type Listener<T> = (e: T) => unknown;
export type Event<T> = (listener: Listener<T>, thisArg?: unknown, disposables?: Disposable[]) => Disposable;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];

  readonly event: Event<T> = (listener, thisArg, disposables) => {
    const bound: Listener<T> = (e) => listener.call(thisArg, e);
    this.listeners.push(bound);
    const d = new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== bound)));
    disposables?.push(d);
    return d;
  };

  fire(e: T): void {
    for (const l of [...this.listeners]) l(e);
  }

  /** Listeners still subscribed (to check that a disposed client left none behind). */
  get size(): number {
    return this.listeners.length;
  }

  dispose(): void {
    this.listeners = [];
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

// vscode-languageclient extends these classes when it loads; the routing never makes one.
export class CallHierarchyItem {}
export class CodeAction {}
export class CodeLens {}
export class CompletionItem {}
export class Diagnostic {}
export class DocumentLink {}
export class InlayHint {}
export class SymbolInformation {}
export class TypeHierarchyItem {}
export class CancellationError extends Error {}

// ---- the window's state ---------------------------------------------------------------------

export interface WorkspaceFolder {
  readonly uri: Uri;
  readonly name: string;
  readonly index: number;
}

export interface TextDocument {
  readonly uri: Uri;
  readonly languageId: string;
  readonly isUntitled: boolean;
  readonly fileName: string;
}

export interface NotebookDocument {
  readonly uri: Uri;
  getCells(): { document: TextDocument }[];
}

export interface TextEditor {
  readonly document: TextDocument;
}

interface WorkspaceFoldersChangeEvent {
  added: readonly WorkspaceFolder[];
  removed: readonly WorkspaceFolder[];
}

interface ConfigurationChangeEvent {
  affectsConfiguration(section: string, scope?: Uri | { uri: Uri }): boolean;
}

/** A log output channel that keeps its lines. */
export class FakeLog {
  readonly lines: string[] = [];
  disposed = false;
  shown = 0;
  readonly logLevel = 2;
  constructor(readonly name: string) {}
  trace(m: string): void { this.lines.push(`trace ${m}`); }
  debug(m: string): void { this.lines.push(`debug ${m}`); }
  info(m: string): void { this.lines.push(`info ${m}`); }
  warn(m: string): void { this.lines.push(`warn ${m}`); }
  error(m: unknown): void { this.lines.push(`error ${String(m)}`); }
  append(m: string): void { this.lines.push(m); }
  appendLine(m: string): void { this.lines.push(m); }
  replace(m: string): void { this.lines.splice(0, this.lines.length, m); }
  clear(): void { this.lines.length = 0; }
  show(): void { this.shown++; }
  hide(): void {}
  dispose(): void { this.disposed = true; }
}

/** The Python extension's published API (`@vscode/python-extension`), the part the client uses. */
interface ActiveEnvironmentPathChangeEvent {
  id: string;
  path: string;
  resource: WorkspaceFolder | undefined;
}

class State {
  folders: WorkspaceFolder[] = [];
  documents: TextDocument[] = [];
  notebooks: NotebookDocument[] = [];
  activeEditor: TextEditor | undefined;
  /** Settings by scope: '' the workspace's (and user's), else a folder URI. Keys are full ("torchMlirLens.python"). */
  settings = new Map<string, Record<string, unknown>>();
  commands = new Map<string, (...args: unknown[]) => unknown>();
  logs: FakeLog[] = [];
  pythonExtension = false;
  /** The Python extension's selected interpreter per folder URI ('' for the workspace). */
  interpreters = new Map<string, string>();
  trusted = true;
  /** Quick picks shown, with their titles. */
  quickPicks: { items: unknown; title?: string }[] = [];
  /** What the next quick picks choose: an item's label each (none left: dismissed). */
  quickPickAnswers: string[] = [];
  /** What the next save or open dialogs answer (none left: cancelled). */
  dialogAnswers: Uri[] = [];
}

let state = new State();

function emitters() {
  return {
    opened: new EventEmitter<TextDocument>(),
    closed: new EventEmitter<TextDocument>(),
    folders: new EventEmitter<WorkspaceFoldersChangeEvent>(),
    configuration: new EventEmitter<ConfigurationChangeEvent>(),
    trustGranted: new EventEmitter<void>(),
    activeEditor: new EventEmitter<TextEditor | undefined>(),
    interpreter: new EventEmitter<ActiveEnvironmentPathChangeEvent>(),
  };
}
let events = emitters();

/** An event of the current `events` (replaced on reset, so a test never sees an earlier one's listeners). */
function relay<T>(pick: () => EventEmitter<T>): Event<T> {
  return (listener, thisArg, disposables) => pick().event(listener, thisArg, disposables);
}

function scopeUri(scope: unknown): Uri | undefined {
  if (scope instanceof Uri) return scope;
  if (scope && typeof scope === 'object' && (scope as { uri?: unknown }).uri instanceof Uri) return (scope as { uri: Uri }).uri;
  return undefined;
}

function isEqualOrParent(folder: Uri, uri: Uri): boolean {
  if (folder.scheme !== uri.scheme || folder.authority !== uri.authority) return false;
  const base = folder.path.replace(/\/+$/, '');
  return uri.path === base || uri.path.startsWith(`${base}/`);
}

/** The innermost workspace folder holding `uri`, as VS Code answers it. */
function getWorkspaceFolder(uri: Uri): WorkspaceFolder | undefined {
  return state.folders.filter((f) => isEqualOrParent(f.uri, uri)).sort((a, b) => b.uri.path.length - a.uri.path.length)[0];
}

// ---- the API --------------------------------------------------------------------------------

export const workspace = {
  get workspaceFolders(): readonly WorkspaceFolder[] | undefined {
    return state.folders.length ? state.folders : undefined; // VS Code: undefined with no folder open
  },
  get textDocuments(): readonly TextDocument[] {
    return state.documents;
  },
  get notebookDocuments(): readonly NotebookDocument[] {
    return state.notebooks;
  },
  get isTrusted(): boolean {
    return state.trusted;
  },
  getWorkspaceFolder,
  getConfiguration(section: string, scope?: unknown) {
    const uri = scopeUri(scope);
    const folder = uri ? getWorkspaceFolder(uri) : undefined;
    const lookup = (key: string): unknown => {
      const full = section ? `${section}.${key}` : key;
      const own = folder ? state.settings.get(folder.uri.toString())?.[full] : undefined;
      return own !== undefined ? own : state.settings.get('')?.[full];
    };
    return {
      get<T>(key: string, fallback?: T): T | undefined {
        const v = lookup(key);
        return v !== undefined ? (v as T) : fallback;
      },
      has: (key: string) => lookup(key) !== undefined,
    };
  },
  onDidOpenTextDocument: relay(() => events.opened),
  onDidCloseTextDocument: relay(() => events.closed),
  onDidChangeWorkspaceFolders: relay(() => events.folders),
  onDidChangeConfiguration: relay(() => events.configuration),
  onDidGrantWorkspaceTrust: relay(() => events.trustGranted),
};

export const window = {
  get activeTextEditor(): TextEditor | undefined {
    return state.activeEditor;
  },
  onDidChangeActiveTextEditor: relay(() => events.activeEditor),
  createOutputChannel(name: string): FakeLog {
    const log = new FakeLog(name);
    state.logs.push(log);
    return log;
  },
  createStatusBarItem(id?: string) {
    return { id, name: '', text: '', tooltip: '' as unknown, command: '', backgroundColor: undefined as unknown, show() {}, hide() {}, dispose() {} };
  },
  /** Records the question; answers the item `fake.answerQuickPicks` named, else dismisses it. */
  showQuickPick(items: unknown, options?: { title?: string }): Promise<unknown> {
    state.quickPicks.push({ items, title: options?.title });
    const label = state.quickPickAnswers.shift();
    const found = Array.isArray(items) ? (items as { label?: string }[]).find((i) => i.label === label) : undefined;
    return Promise.resolve(found);
  },
  /** The next of `fake.answerDialogs`, else cancelled. */
  showSaveDialog(): Promise<Uri | undefined> {
    return Promise.resolve(state.dialogAnswers.shift());
  },
  /** The next of `fake.answerDialogs` (as the one folder picked), else cancelled. */
  showOpenDialog(): Promise<Uri[] | undefined> {
    const uri = state.dialogAnswers.shift();
    return Promise.resolve(uri && [uri]);
  },
  withProgress<R>(_options: unknown, task: (progress: { report(): void }, token: unknown) => Promise<R>): Promise<R> {
    return task({ report: () => undefined }, { isCancellationRequested: false, onCancellationRequested: () => new Disposable(() => undefined) });
  },
  showInformationMessage: (): Promise<undefined> => Promise.resolve(undefined),
  showWarningMessage: (): Promise<undefined> => Promise.resolve(undefined),
  showErrorMessage: (): Promise<undefined> => Promise.resolve(undefined),
};

interface DocumentFilter {
  scheme?: string;
  language?: string;
}

export const languages = {
  /** 10 when a filter of the selector names the document's scheme and language, else 0 (as VS Code scores exact matches). */
  match(selector: readonly (DocumentFilter | string)[], doc: TextDocument): number {
    const hit = selector.some((f) =>
      typeof f === 'string' ? f === doc.languageId : (!f.scheme || f.scheme === doc.uri.scheme) && (!f.language || f.language === doc.languageId),
    );
    return hit ? 10 : 0;
  },
};

export const commands = {
  /** One handler per command id, as VS Code allows: a second registration throws. */
  registerCommand(id: string, handler: (...args: unknown[]) => unknown): Disposable {
    if (state.commands.has(id)) throw new Error(`command '${id}' already exists`);
    state.commands.set(id, handler);
    const registered = state;
    return new Disposable(() => registered.commands.delete(id));
  },
  async executeCommand<T>(id: string, ...args: unknown[]): Promise<T> {
    const handler = state.commands.get(id);
    if (!handler) throw new Error(`command '${id}' not found`);
    return (await handler(...args)) as T;
  },
};

/** The Python extension's interpreter where none was selected. */
export const DEFAULT_PYTHON = '/usr/bin/python3';

/** The Python extension's exports: one object per process, as `@vscode/python-extension` caches it. */
const pythonExports = {
  ready: Promise.resolve(),
  environments: {
    getActiveEnvironmentPath(resource?: Uri | WorkspaceFolder) {
      const uri = scopeUri(resource);
      const folder = uri ? getWorkspaceFolder(uri) : undefined;
      const p = state.interpreters.get(folder ? folder.uri.toString() : '') ?? state.interpreters.get('') ?? DEFAULT_PYTHON;
      return { id: p, path: p };
    },
    async resolveEnvironment(env: string | { path: string }) {
      const p = typeof env === 'string' ? env : env.path;
      return { id: p, path: p, executable: { uri: Uri.file(p) } };
    },
    onDidChangeActiveEnvironmentPath: relay(() => events.interpreter),
  },
};

export const extensions = {
  getExtension(id: string) {
    if (id !== 'ms-python.python' || !state.pythonExtension) return undefined;
    return { id, isActive: true, activate: () => Promise.resolve(pythonExports), exports: pythonExports };
  },
};

export const env = {
  clipboard: { writeText: (): Promise<void> => Promise.resolve() },
};

// ---- the tests' handle ----------------------------------------------------------------------

/** Drives the fake window: what a user or VS Code would do, plus a look at what the client left. */
export const fake = {
  /** A fresh window: no folders, documents or settings; the Python extension absent. */
  reset(): void {
    for (const e of Object.values(events)) e.dispose();
    state = new State();
    events = emitters();
  },

  /** Opens `uris` as the workspace's folders (no event: the window starts with them). */
  setFolders(...uris: Uri[]): WorkspaceFolder[] {
    state.folders = uris.map((uri, index) => ({ uri, name: posix.basename(uri.path), index }));
    return state.folders;
  },

  /** Adds a folder as "Add Folder to Workspace" does. */
  addFolder(uri: Uri): WorkspaceFolder {
    const folder = { uri, name: posix.basename(uri.path), index: state.folders.length };
    state.folders = [...state.folders, folder];
    events.folders.fire({ added: [folder], removed: [] });
    return folder;
  },

  /** Removes a folder as "Remove Folder from Workspace" does (the others are renumbered). */
  removeFolder(folder: WorkspaceFolder): void {
    state.folders = state.folders.filter((f) => f !== folder).map((f, index) => ({ ...f, index }));
    events.folders.fire({ added: [], removed: [folder] });
  },

  /** A document as VS Code opens it (`silent`: already open when the client starts, no event). */
  open(uri: Uri, languageId = 'python', silent = false): TextDocument {
    const doc: TextDocument = { uri, languageId, isUntitled: uri.scheme === 'untitled', fileName: uri.fsPath };
    state.documents = [...state.documents, doc];
    if (!silent) events.opened.fire(doc);
    return doc;
  },

  close(doc: TextDocument): void {
    state.documents = state.documents.filter((d) => d !== doc);
    events.closed.fire(doc);
  },

  /**
   * Opens a notebook whose cells are `cells`. As in VS Code's extension host, the notebook is
   * listed before its cells' documents open (so a cell's open event can find its notebook).
   */
  openNotebook(uri: Uri, cells: Uri[]): TextDocument[] {
    const docs = cells.map((c) => fake.open(c, 'python', true));
    state.notebooks = [...state.notebooks, { uri, getCells: () => docs.map((document) => ({ document })) }];
    for (const d of docs) events.opened.fire(d);
    return docs;
  },

  /** Makes `doc`'s editor the active one (undefined: no editor has the focus). */
  activate(doc: TextDocument | undefined): void {
    state.activeEditor = doc ? { document: doc } : undefined;
    events.activeEditor.fire(state.activeEditor);
  },

  /** Writes settings (full keys) in `folder`'s settings or, without one, the workspace's, and says so. */
  configure(folder: WorkspaceFolder | undefined, values: Record<string, unknown>): void {
    const scope = folder ? folder.uri.toString() : '';
    state.settings.set(scope, { ...state.settings.get(scope), ...values });
    const keys = Object.keys(values);
    events.configuration.fire({
      // Without a scope: whether the section changed anywhere. With one: a folder's change
      // affects only resources in that folder, the workspace's every resource.
      affectsConfiguration: (section, resource) => {
        if (!keys.some((k) => k === section || k.startsWith(`${section}.`))) return false;
        const uri = scopeUri(resource);
        return !folder || !resource || (uri !== undefined && getWorkspaceFolder(uri) === folder);
      },
    });
  },

  /** Settings present before the client starts (no event). */
  preset(folder: WorkspaceFolder | undefined, values: Record<string, unknown>): void {
    const scope = folder ? folder.uri.toString() : '';
    state.settings.set(scope, { ...state.settings.get(scope), ...values });
  },

  /** The Python extension is installed (its API then answers the interpreter per folder). */
  installPythonExtension(): void {
    state.pythonExtension = true;
  },

  /** The user picks an interpreter in the Python extension for `folder` (undefined: the workspace). */
  selectInterpreter(folder: WorkspaceFolder | undefined, path: string): void {
    state.interpreters.set(folder ? folder.uri.toString() : '', path);
    events.interpreter.fire({ id: path, path, resource: folder });
  },

  /** Command ids registered now. */
  commands(): string[] {
    return [...state.commands.keys()];
  },

  /** Titles of the quick picks shown so far. */
  quickPickTitles(): (string | undefined)[] {
    return state.quickPicks.map((q) => q.title);
  },

  /** The labels the next quick picks choose, in order. */
  answerQuickPicks(...labels: string[]): void {
    state.quickPickAnswers.push(...labels);
  },

  /** What the next save or open dialogs answer, in order. */
  answerDialogs(...uris: Uri[]): void {
    state.dialogAnswers.push(...uris);
  },

  /** Output channels made so far. */
  logs(): readonly FakeLog[] {
    return state.logs;
  },

  /** Listeners on each of the window's events (a disposed client leaves none). */
  listeners(): Record<string, number> {
    return Object.fromEntries(Object.entries(events).map(([name, e]) => [name, e.size]));
  },
};

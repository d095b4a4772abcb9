// Which documents the servers serve, and which server owns a document: the one of its
// workspace folder (the innermost, for nested folders), else the default server for files
// outside every folder and untitled files. The document selector is defined here only.

import * as vscode from 'vscode';
import type { DocumentSelector } from 'vscode-languageclient/node';
import { CELL_SCHEME, CELL_SELECTORS, notebookOf } from './notebookCells';

/** Key of the default server (files outside every folder, untitled files). */
export const DEFAULT_KEY = '';

/** The documents every server is offered; ownership (below) then picks one server per document. */
export function documentSelector(): DocumentSelector {
  return [
    { scheme: 'file', language: 'python' },
    { scheme: 'untitled', language: 'python' },
    ...CELL_SELECTORS, // notebook cells (synced through notebookDocument/*)
  ];
}

/** A document some server serves (whether or not its server runs yet). */
export function isServed(doc: vscode.TextDocument): boolean {
  return vscode.languages.match(documentSelector() as vscode.DocumentSelector, doc) > 0;
}

/** The workspace folder a document belongs to (none for untitled files and files outside). */
export function folderOf(uri: vscode.Uri): vscode.WorkspaceFolder | undefined {
  if (uri.scheme === 'untitled') return undefined;
  // A notebook cell belongs where its notebook is. Ask the open notebook for its URI: a cell's
  // URI does not keep the notebook's scheme (`vscode-remote:` in a remote window, not `file:`).
  const notebook = uri.scheme === CELL_SCHEME ? notebookOf(uri.toString()) : undefined;
  const file = notebook ? vscode.Uri.parse(notebook)
    : uri.scheme === CELL_SCHEME ? uri.with({ scheme: 'file', fragment: '' }) : uri;
  return vscode.workspace.getWorkspaceFolder(file);
}

export function keyOfFolder(folder: vscode.WorkspaceFolder | undefined): string {
  return folder ? folder.uri.toString() : DEFAULT_KEY;
}

/** Key of the server that owns a document. */
export function ownerKey(uri: vscode.Uri): string {
  return keyOfFolder(folderOf(uri));
}

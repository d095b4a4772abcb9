// Jupyter notebook cells: the server treats a notebook as one document (its URI is the IR
// panes' source) and names cells (`vscode-notebook-cell:` URIs) in the panes' line maps.
// Here: which notebook a cell belongs to, so panes, linking and commands find their source.

import * as vscode from 'vscode';

export const CELL_SCHEME = 'vscode-notebook-cell';

/** Document selectors of notebook cells the language client serves (synced as notebooks). */
export const CELL_SELECTORS = [{ scheme: CELL_SCHEME, language: 'python' }];

/** The URI of the notebook holding the cell document `uri`, if it is a cell. */
export function notebookOf(uri: string): string | undefined {
  if (!uri.startsWith(`${CELL_SCHEME}:`)) return undefined;
  const nb = vscode.workspace.notebookDocuments.find((n) => n.getCells().some((c) => c.document.uri.toString() === uri));
  return nb?.uri.toString();
}

/** The source a document's IR panes are keyed by: its notebook for a cell, else itself. */
export function sourceKey(uri: string): string {
  return notebookOf(uri) ?? uri;
}

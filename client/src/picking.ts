// Asking the user which module and which target, when a command was not told.

import * as vscode from 'vscode';
import type { IrPanes } from './irPanes';
import type { LensClient } from './languageClient';
import { sourceKey } from './notebookCells';
import { SCHEME } from './paneSpec';
import { MODULES, TARGETS, targetTitle, type ModulesResponse } from './protocol';
import { setting } from './settings';

export interface ModuleChoice {
  source: string; // URI
  module: string;
}

export interface TargetChoice {
  target: string;
  pipelineName?: string;
  pipeline?: string;
}

/** The source document a command is about: its argument, the active Python editor, or the active pane's source. */
export function sourceOf(panes: IrPanes, arg?: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  if (arg instanceof vscode.Uri) return arg.toString();
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc) return undefined;
  if (doc.uri.scheme === SCHEME) return panes.get(doc.uri)?.spec.source;
  return doc.languageId === 'python' ? sourceKey(doc.uri.toString()) : undefined;
}

export async function pickModule(client: LensClient, panes: IrPanes, arg?: unknown): Promise<ModuleChoice | undefined> {
  const active = vscode.window.activeTextEditor;
  if (!arg && active?.document.uri.scheme === SCHEME) {
    const pane = panes.get(active.document.uri);
    if (pane) return { source: pane.spec.source, module: pane.spec.module };
  }
  const source = sourceOf(panes, arg);
  if (!source) {
    void vscode.window.showInformationMessage('Torch-MLIR Lens: open a Python file with an nn.Module first.');
    return undefined;
  }
  const { modules } = await client.request<ModulesResponse>(MODULES, { uri: source });
  if (!modules.length) {
    void vscode.window.showInformationMessage('Torch-MLIR Lens: no nn.Module found in this file.');
    return undefined;
  }
  const cursorLine =
    active && active.document.uri.toString() === source ? active.selection.active.line : undefined;
  const under = modules.find(
    (m) => cursorLine !== undefined && m.range.start.line <= cursorLine && cursorLine <= m.range.end.line,
  );
  if (modules.length === 1) return { source, module: modules[0].name };
  const items = modules.map((m) => ({
    label: m.name,
    description: m.kind === 'function' ? 'function' : undefined,
    detail: m.inputs === 'missing' ? 'example inputs missing' : `inputs: ${m.inputs}`,
    picked: m === under,
  }));
  items.sort((a, b) => Number(b.picked) - Number(a.picked)); // the module under the cursor first
  const picked = await vscode.window.showQuickPick(items, { title: 'Torch-MLIR Lens: module', placeHolder: 'Which module?' });
  return picked ? { source, module: picked.label } : undefined;
}

export async function pickTarget(title = 'Torch-MLIR Lens: target'): Promise<TargetChoice | undefined> {
  const defaultTarget = setting('defaultTarget', 'linalg');
  const pipelines = setting<Record<string, string>>('pipelines', {});
  type Item = vscode.QuickPickItem & { choice: TargetChoice };
  const items: Item[] = TARGETS.map((t) => ({
    label: targetTitle(t),
    description: t === defaultTarget ? `${t} (default)` : t,
    choice: { target: t },
  }));
  items.sort((a, b) => Number(b.choice.target === defaultTarget) - Number(a.choice.target === defaultTarget));
  for (const [name, pipeline] of Object.entries(pipelines)) {
    items.push({ label: name, description: 'custom pipeline', detail: pipeline, choice: { target: 'custom', pipelineName: name, pipeline } });
  }
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder: 'Which IR?' });
  return picked?.choice;
}

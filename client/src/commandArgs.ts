// What a palette command acts on: the module (and target) its arguments name, else the active
// IR pane's, else what the user picks. Shared by the command modules (see commands.ts).

import * as vscode from 'vscode';
import type { IrPanes } from './irPanes';
import type { LensClient } from './languageClient';
import { SCHEME, type PaneSpec } from './paneSpec';
import { pickModule, pickTarget, type ModuleChoice, type TargetChoice } from './picking';

/** What every command needs: the servers, and the panes (the active one, and to open more). */
export interface CommandDeps {
  client: LensClient;
  panes: IrPanes;
}

/** The `{uri, module, target}` argument of a lens's or a pane button's command. */
export interface ModuleArg {
  uri?: string;
  module?: string;
  target?: string;
}

/** A module a command acts on, with the target its arguments or pane named, if any. */
export type ModuleTarget = ModuleChoice & { target?: string };

export function asModuleArg(x: unknown): ModuleArg {
  return x && typeof x === 'object' && !(x instanceof vscode.Uri) ? (x as ModuleArg) : {};
}

/** The module named by `uri` and `module`, else picked (in the document `uri`, if given). */
export async function resolveModule(deps: CommandDeps, uri?: unknown, module?: string): Promise<ModuleChoice | undefined> {
  if (typeof uri === 'string' && module) return { source: uri, module };
  if (uri instanceof vscode.Uri && module) return { source: uri.toString(), module };
  return pickModule(deps.client, deps.panes, uri);
}

/** `target` if given, else picked. */
export async function resolveTarget(target?: string, title?: string): Promise<TargetChoice | undefined> {
  return target ? { target } : pickTarget(title);
}

/** What the active editor shows, when it is an IR pane. */
export function activePane(panes: IrPanes): PaneSpec | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  return doc?.uri.scheme === SCHEME ? panes.get(doc.uri)?.spec : undefined;
}

/**
 * The module of a command's `{uri, module, target}` argument; what it leaves out comes from
 * the active pane (so pane title-bar buttons need no argument), then from the user.
 */
export async function moduleOfArg(deps: CommandDeps, arg: unknown): Promise<ModuleTarget | undefined> {
  const a = { ...paneArg(deps.panes), ...asModuleArg(arg) };
  const m = await resolveModule(deps, a.uri, a.module);
  return m && { ...m, target: a.target };
}

/** Arguments implied by the active pane (a custom pipeline names no target). */
function paneArg(panes: IrPanes): ModuleArg {
  const spec = activePane(panes);
  return spec ? { uri: spec.source, module: spec.module, target: spec.target === 'custom' ? undefined : spec.target } : {};
}

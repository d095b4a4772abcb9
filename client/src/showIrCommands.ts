// "Show IR…" (also the lenses' "Show … IR") and "Show IR After Pass…": open a pane on a module.

import { activePane, resolveModule, resolveTarget, type CommandDeps } from './commandArgs';
import { pickPass } from './passPicker';
import { pickModule, pickTarget } from './picking';

/** Opens the pane of `module` in `uri` for `target`; what is not given is picked. */
export async function showIr(deps: CommandDeps, uri?: unknown, module?: string, target?: string): Promise<void> {
  const m = await resolveModule(deps, uri, module);
  if (!m) return;
  const t = await resolveTarget(target, `Torch-MLIR Lens: IR of ${m.module}`);
  if (!t) return;
  await deps.panes.open({ source: m.source, module: m.module, ...t });
}

/** The IR after a pass of the active pane's pipeline, or of a picked module and target. */
export async function showIrAfterPass(deps: CommandDeps): Promise<void> {
  let base = activePane(deps.panes);
  if (!base) {
    const m = await pickModule(deps.client, deps.panes);
    if (!m) return;
    const t = await pickTarget(`Torch-MLIR Lens: pipeline of ${m.module}`);
    if (!t) return;
    base = { source: m.source, module: m.module, ...t };
  }
  const { pass: _pass, passName: _name, ...withoutPass } = base;
  await pickPass(deps.client, deps.panes, withoutPass);
}

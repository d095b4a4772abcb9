"""Where each module's example inputs come from, statically: the `ModuleInfo.inputs` status.

The levels follow the worker's precedence (`worker/inputs/`, minus the CLI's `--inputs`,
which discovery does not know): "comment", "convention", "settings", "derived", "inferred", else
"missing". `own_statuses` sets what a class provides itself; `derive_statuses` then spreads
"derived" from parents (a fixed point) and marks the rest "inferred" when a first layer allows.
"""

from __future__ import annotations

import ast
import os

from torch_mlir_lens.discovery.analyzer import Analyzer
from torch_mlir_lens.discovery.model import ModuleInfo
from torch_mlir_lens.discovery.shapes import INFERABLE_LAYERS
from torch_mlir_lens.discovery.syntax import find_method


def settings_key_for(
    name: str, path: str | None, settings: dict[str, str] | None, workspace: str | None,
) -> str | None:
    """The settings key for this module: `rel/path.py::Name` first, then `Name`.

    The worker looks settings up by the same rule.
    """
    if not settings:
        return None
    if path:
        abspath = os.path.abspath(path)
        rels = [os.path.basename(abspath)]
        if workspace:
            rels.insert(0, os.path.relpath(abspath, os.path.abspath(workspace)))
        for rel in rels:
            key = rel.replace(os.sep, "/") + "::" + name
            if key in settings:
                return key
    return name if name in settings else None


def class_convention(cls: ast.ClassDef, stores_example: bool) -> str | None:
    """Which per-class convention the class itself provides, if any."""
    if find_method(cls, "example_inputs") is not None:
        return "example_inputs"
    for stmt in cls.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign):
            targets = [stmt.target]
        if any(isinstance(t, ast.Name) and t.id == "example_input_array" for t in targets):
            return "example_input_array"
    return "example_input_array" if stores_example else None


def has_module_example_inputs(body: list[ast.stmt]) -> bool:
    """Whether the file defines a top-level `example_inputs()` function."""
    return any(isinstance(s, ast.FunctionDef) and s.name == "example_inputs" for s in body)


def link_parents(an: Analyzer, infos: list[ModuleInfo]) -> None:
    """Fill `parent_candidates`: the module classes whose bodies use each class."""
    simple = {i.name.rsplit(".", 1)[-1]: i for i in infos}
    for c in an.classes:
        if c.node.name not in an.module_names:
            continue
        for used in sorted(an.uses(c.node)):
            child = simple.get(used)
            if child is not None and c.qualname not in child.parent_candidates:
                child.parent_candidates.append(c.qualname)


def own_statuses(body: list[ast.stmt], infos: list[ModuleInfo]) -> None:
    """Set `inputs` for each class from what it provides itself, in precedence order.

    Comment (also one with errors), then conventions (its own, `@annotate_args`, a
    module-level `example_inputs()` for top-level classes, one inherited from a same-file
    base), then settings.
    """
    module_fn = has_module_example_inputs(body)
    by_name = {i.name: i for i in infos}
    for info in infos:
        # A comment that cannot be read still says where the inputs come from: the module is
        # lowered, and its errors are reported there, not replaced by other inputs.
        if info.annotation is not None and (info.annotation.inputs or info.annotation.errors):
            info.inputs = "comment"
        elif info.convention is None and info.annotate_args:
            info.convention = "annotate_args"
            info.inputs = "convention"
        elif info.convention is None and module_fn and not info.parent_candidates:
            # A module-level example_inputs() serves the top-level models (see worker/inputs/).
            info.convention = "module_example_inputs"
            info.inputs = "convention"
        elif info.convention is not None:
            info.inputs = "convention"
        elif info.settings_key is not None:
            info.inputs = "settings"
    _inherit_conventions(infos, by_name)


def derive_statuses(infos: list[ModuleInfo]) -> None:
    """Classes still "missing": "derived" from a sibling file's parent or (transitively) from a
    parent of this file with inputs, else "inferred" when the first layer allows it."""
    by_name = {i.name: i for i in infos}
    for info in infos:
        if info.inputs == "missing" and info.sibling_parents:
            info.inputs = "derived"
    changed = True
    while changed:
        changed = False
        for info in infos:
            if info.inputs in ("missing", "inferred") and any(
                by_name[p].inputs not in ("missing",) for p in info.parent_candidates
                if p in by_name
            ):
                if info.inputs != "derived":
                    info.inputs, changed = "derived", True
            elif info.inputs == "missing" and _inferable(info):
                info.inputs, changed = "inferred", True


def _inherit_conventions(infos: list[ModuleInfo], by_name: dict[str, ModuleInfo]) -> None:
    """A subclass of a same-file class that provides a convention gets it too."""
    for info in infos:
        if info.inputs != "missing":
            continue
        for base in info.bases:
            parent = by_name.get(base)
            if parent is not None and parent.convention in ("example_inputs",
                                                            "example_input_array"):
                info.convention, info.inputs = parent.convention, "convention"
                break


def _inferable(info: ModuleInfo) -> bool:
    """Forward takes one tensor, the constructor needs nothing, the first layer is known."""
    needs_init = bool(info.init_required) and not (info.annotation and info.annotation.init)
    return (
        info.forward_required == 1 and not needs_init and info.first_layer is not None
        and info.first_layer.kind in INFERABLE_LAYERS
    )

"""The precedence: try each source of inputs in order, or explain which comment to add.

Given inputs (CLI, job) → comment → conventions → settings → derived → inferred; the order
and its reasons are in `worker/inputs/__init__.py`.
"""

from __future__ import annotations

import os
import types
from typing import Any

import torch

from torch_mlir_lens.discovery import ModuleInfo, find_modules, input_template, settings_key_for
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.worker.inputs.construction import LazyInstance, construct_module, lookup
from torch_mlir_lens.worker.inputs.conventions import convention_inputs
from torch_mlir_lens.worker.inputs.derived import derived_inputs
from torch_mlir_lens.worker.inputs.inferred import inferred_inputs, required_forward_args
from torch_mlir_lens.worker.inputs.result import ResolvedInputs
from torch_mlir_lens.worker.inputs.values import (
    as_call_args,
    evaluate,
    load_inputs_file,
    locate,
    namespace,
    seeded,
    settings_value,
    to_dims,
)


def resolve_inputs(
    mod: types.ModuleType,
    name: str,
    *,
    path: str,
    text: str,
    inputs_expr: str | None = None,
    inputs_file: str | None = None,
    init_expr: str | None = None,
    settings_inputs: dict[str, str] | None = None,
    workspace: str | None = None,
) -> ResolvedInputs:
    """Example inputs for `name` in the loaded file, by the precedence in the package docstring.

    Raises LensError: "unknown-module", "bad-inputs" (an expression or file failed),
    "inputs-missing" (nothing applies; the message holds the comment to add).
    """
    with seeded():  # the same example and weights on every build (values.seeded)
        return _resolve(mod, name, path=os.path.abspath(path), text=text,
                        inputs_expr=inputs_expr, inputs_file=inputs_file, init_expr=init_expr,
                        settings=settings_inputs or {}, workspace=workspace,
                        allow_derived=True)


def instantiate(mod: types.ModuleType, name: str, resolved: ResolvedInputs) -> Any:
    """The module in eval() mode (built with the resolved constructor arguments), or the function
    itself. Reuses the instance built while resolving, if any."""
    obj = lookup(mod, name)
    if not isinstance(obj, type):
        return obj
    instance = resolved.instance
    if instance is None:
        with seeded():
            instance = construct_module(obj, name, resolved.init_args, resolved.init_kwargs,
                                        None, mod.__file__ or "", "init")
    if isinstance(instance, torch.nn.Module):
        instance.eval()
    return instance


def _find_info(text: str, path: str, name: str, settings: dict[str, str],
               workspace: str | None) -> tuple[ModuleInfo | None, dict[str, ModuleInfo]]:
    infos = find_modules(text, path, settings_inputs=settings, workspace=workspace)
    by_name = {i.name: i for i in infos}
    return by_name.get(name), by_name


def _resolve(
    mod: types.ModuleType, name: str, *, path: str, text: str, inputs_expr: str | None,
    inputs_file: str | None, init_expr: str | None, settings: dict[str, str],
    workspace: str | None, allow_derived: bool,
) -> ResolvedInputs:
    obj = lookup(mod, name)
    info, by_name = _find_info(text, path, name, settings, workspace)
    ns = namespace(mod)
    ann = info.annotation if info else None
    if ann is not None and ann.errors:  # never lower with inputs the user did not write
        first = ann.errors[0]
        raise LensError(ErrorKind.BAD_INPUTS, first.message, file=path, line=first.line)
    init_src = "--init" if init_expr else "init"
    init_args, init_kwargs = _resolve_init(init_expr, info, ns, path)
    dynamic = None
    line: int | None = None
    if ann is not None and ann.dynamic:
        line = ann.key_lines.get("dynamic")
        raw = evaluate(ann.dynamic, ns, "dynamic", path, line)
        try:
            dynamic = to_dims(raw, {})
        except Exception as exc:  # e.g. a dim name that is not an identifier
            raise LensError(ErrorKind.BAD_INPUTS, f"dynamic `{ann.dynamic}`: {exc}", file=path,
                            line=line) from None
    instance = LazyInstance(obj, name, (init_args, init_kwargs), info, path, init_src)

    dynamic_at = (path, line) if dynamic is not None and line is not None else None

    def done(value: Any, source: str, detail: str) -> ResolvedInputs:
        args, kwargs = as_call_args(value)
        return ResolvedInputs(args, kwargs, init_args, init_kwargs, dynamic, source, detail,
                              instance.value, dynamic_at)

    if inputs_expr:
        return done(evaluate(inputs_expr, ns, "--inputs", path, None), "cli", inputs_expr)
    if inputs_file:
        file = locate(inputs_file, path, workspace)
        return done(load_inputs_file(file, path, "inputs file"), "inputs-file", file)
    if ann is not None and ann.inputs:
        value = evaluate(ann.inputs, ns, "inputs", path, ann.key_lines.get("inputs"))
        return done(value, "comment", ann.inputs)
    found = convention_inputs(mod, obj, name, info, by_name, ns, instance, path)
    if found is not None:
        return done(found[1], f"convention:{found[0]}", found[0])
    key = settings_key_for(name, path, settings, workspace)
    if key is not None:
        return done(settings_value(settings[key], ns, path, workspace, key), "settings", key)
    if allow_derived and info is not None:
        derived = derived_inputs(mod, name, info, by_name, path=path, text=text,
                                 settings=settings, workspace=workspace, resolve_own=_resolve_own)
        if derived is not None:
            if init_expr or (ann is not None and ann.init):
                derived.init_args, derived.init_kwargs = init_args, init_kwargs
                derived.instance = None
            derived.dynamic_shapes, derived.dynamic_at = dynamic, dynamic_at
            return derived
    inferred = inferred_inputs(obj, info, instance)
    if inferred is not None:
        return done(evaluate(inferred[0], ns, "inferred inputs", path, None), "inferred",
                    inferred[1])
    raise _missing(name, obj, info, text, path)


def _resolve_own(
    mod: types.ModuleType, name: str, path: str, text: str, settings: dict[str, str],
    workspace: str | None,
) -> ResolvedInputs:
    """A parent's inputs from its own sources (derived inputs record inside it)."""
    return _resolve(mod, name, path=path, text=text, inputs_expr=None, inputs_file=None,
                    init_expr=None, settings=settings, workspace=workspace, allow_derived=False)


def _resolve_init(init_expr: str | None, info: ModuleInfo | None, ns: dict[str, Any],
                  path: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Constructor arguments: --init beats the comment's init=; none by default."""
    if init_expr:
        return as_call_args(evaluate(init_expr, ns, "--init", path, None))
    ann = info.annotation if info else None
    if ann is not None and ann.init:
        return as_call_args(evaluate(ann.init, ns, "init", path, ann.key_lines.get("init")))
    return (), {}


def _missing(name: str, obj: Any, info: ModuleInfo | None, text: str, path: str) -> LensError:
    """The inputs-missing error: which module, why, and the exact comment to add."""
    kind = "class" if isinstance(obj, type) else "def"
    reasons = ["no `# torch-mlir-lens: inputs=` comment, convention or setting"]
    if info is not None and info.kind == "class":
        if info.parent_candidates:
            reasons.append(f"its parents ({', '.join(info.parent_candidates)}) have no inputs "
                           "either or never call it")
        else:
            reasons.append("no module of this file uses it")
        required = required_forward_args(obj)
        needs = info.init_required and not (info.annotation and info.annotation.init)
        if required != 1:
            reasons.append(f"forward takes {required} tensors, so none can be inferred")
        elif needs:
            reasons.append(f"its constructor needs ({', '.join(info.init_required)})")
        else:
            reasons.append("its first layer gives no input shape")
    comment = input_template(info, text).strip() if info is not None else (
        "# torch-mlir-lens: inputs=(torch.randn(2, 16),)"
    )
    line = info.line if info is not None else None
    where = f"above `{kind} {name.rsplit('.', 1)[-1]}`" + (f" (line {line})" if line else "")
    return LensError(
        ErrorKind.INPUTS_MISSING,
        f"no example inputs for {name}: {'; '.join(reasons)}. Add {where}: {comment}",
        file=path, line=line,
    )

"""Inputs from conventions already in use: `example_inputs()`, `example_input_array`,
`@annotate_args(...)` on forward, a module-level `example_inputs()` function.

Checked in that order (the precedence in `worker/inputs/__init__.py`); a -1 dim of
`annotate_args` becomes 4.
"""

from __future__ import annotations

import types
from typing import Any

import torch

from torch_mlir_lens.discovery import ModuleInfo
from torch_mlir_lens.worker.inputs.construction import LazyInstance, call_user
from torch_mlir_lens.worker.inputs.values import evaluate


def convention_inputs(
    mod: types.ModuleType, obj: Any, name: str, info: ModuleInfo | None,
    by_name: dict[str, ModuleInfo], ns: dict[str, Any], instance: LazyInstance, path: str,
) -> tuple[str, Any] | None:
    """(which convention, its value) or None."""
    if isinstance(obj, type):
        if callable(getattr(obj, "example_inputs", None)):
            return "example_inputs", call_user(lambda: instance.get().example_inputs(),
                                               f"{name}.example_inputs()", path)
        class_value = getattr(obj, "example_input_array", None)
        if class_value is not None:
            return "example_input_array", class_value
        if info is not None and info.convention == "example_input_array":
            value = getattr(instance.get(), "example_input_array", None)
            if value is not None:
                return "example_input_array", value
        annotated = _annotate_args_inputs(obj, info, ns, path)
        if annotated is not None:
            return "annotate_args", annotated
    fn = getattr(mod, "example_inputs", None)
    if callable(fn) and not isinstance(fn, type):
        value = call_user(fn, "example_inputs()", path)
        if isinstance(value, dict) and name in value:
            return "module_example_inputs", value[name]
        keyed = isinstance(value, dict) and value and all(k in by_name for k in value)
        top_level = info is None or not info.parent_candidates
        if not keyed and top_level:
            return "module_example_inputs", value
    return None


def _annotate_args_inputs(obj: type, info: ModuleInfo | None, ns: dict[str, Any],
                          path: str) -> tuple[Any, ...] | None:
    """Inputs built from `@annotate_args([None, (shape, dtype, value_tensor), ...])`."""
    forward = getattr(obj, "forward", None)
    spec = getattr(forward, "_torch_mlir_arg_annotations", None)
    if spec is None and info is not None and info.annotate_args:
        spec = evaluate(info.annotate_args, ns, "annotate_args", path, info.forward_line)
    if not isinstance(spec, list | tuple):
        return None
    tensors = []
    for entry in list(spec)[1:]:  # the first entry stands for `self`
        if not isinstance(entry, list | tuple) or len(entry) < 2:
            return None
        shape = [4 if d == -1 else int(d) for d in entry[0]]
        dtype = entry[1]
        if dtype.is_floating_point or dtype.is_complex:
            tensors.append(torch.randn(shape, dtype=dtype))
        elif dtype == torch.bool:
            tensors.append(torch.randint(0, 2, shape).to(torch.bool))
        else:
            tensors.append(torch.randint(0, 10, shape, dtype=dtype))
    return tuple(tensors)

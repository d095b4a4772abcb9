"""`torch.sym_min` / `torch.sym_max` handed to the importer as `prim::min` / `prim::max`.

torch-mlir 20261001's FxImporter imports the symbolic scalar ops it knows (`sym_size`,
`sym_stride`, `sym_numel`, the Python operators of its PY_BUILTIN_TO_TORCH_OP) and no other:
`torch.sym_min(1, u2)`, which torch.export records where a size depends on data (GLM-5's
`topk(scores, min(k, n))` over a masked selection), stops the import with "NotImplementedError:
FIX ME: Unimplemented call_function: target=<function sym_min ...>"
(python/torch_mlir/extras/fx_importer.py, unchanged on llvm/torch-mlir main as of 2026-08).

The same function of two ints (or floats) is the op overload `prim::min.int` (`.float`, ...),
which the importer imports as `torch.prim.min.int` and TorchToArith lowers. `prim_min_max`
retargets those nodes before the import. Drop this module when the importer maps
`sym_min`/`sym_max` itself.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node

_OPS = {torch.sym_min: torch.ops.prim.min, torch.sym_max: torch.ops.prim.max}
# (first, second) operand kinds → the prim overload taking them
_OVERLOADS = {("int", "int"): "int", ("float", "float"): "float",
              ("int", "float"): "int_float", ("float", "int"): "float_int"}


def _kind(arg: Any) -> str | None:
    value = arg.meta.get("val") if isinstance(arg, Node) else arg
    if isinstance(value, bool):
        return None
    if isinstance(value, int | torch.SymInt):
        return "int"
    if isinstance(value, float | torch.SymFloat):
        return "float"
    return None


def prim_min_max(program: Any) -> int:
    """Retarget every `sym_min`/`sym_max` node of two ints or floats to its `prim` overload,
    in place; the number of nodes changed."""
    changed = 0
    for node in program.graph.nodes:
        if node.op != "call_function" or node.target not in _OPS or len(node.args) != 2:
            continue
        kinds = tuple(_kind(a) for a in node.args)
        overload = _OVERLOADS.get(kinds)  # type: ignore[arg-type]
        if overload is not None:
            node.target = getattr(_OPS[node.target], overload)
            changed += 1
    return changed


__all__ = ["prim_min_max"]

"""Candidate rewrites for a rejected op, best first; none is offered before proof.py.

    candidates(culprit)   → [Rewrite]: this repository's library, then torch's own
                            decomposition (`torch._decomp`) and reference implementation
                            (`torch._refs`) of the op where torch-mlir's table leaves it out
    by_name(name)         → the Rewrite a `rewrites=NAME` names, or None

torch's entries are named after the op: `decomp.adaptive_max_pool2d`, `refs.acos`,
`decomp.slice.Tensor` (an overload other than `default` keeps its name).
"""

from __future__ import annotations

from typing import Any

import torch

from torch_mlir_lens.worker.rewrites.library import LIBRARY
from torch_mlir_lens.worker.rewrites.table import (
    TORCH_DECOMP,
    TORCH_REFS,
    Rewrite,
    mlir_name,
    overload_of,
)

_PREFIXES = {"decomp": TORCH_DECOMP, "refs": TORCH_REFS}


def _default_table() -> dict[Any, Any]:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    return get_decomposition_table()


def _short(op: Any) -> str:
    """`aten.slice.Tensor` → `slice.Tensor`, `aten.erfinv` → `erfinv`."""
    return mlir_name(op).removeprefix("aten.")


def _torch_decomp(op: Any) -> Rewrite | None:
    import torch._decomp

    fn = torch._decomp.decomposition_table.get(op)
    if fn is None or op in _default_table():
        return None
    return Rewrite(name=f"decomp.{_short(op)}", culprits=(mlir_name(op),),
                   entries=((str(op), fn),), source=TORCH_DECOMP,
                   method=f"torch's own decomposition of `{mlir_name(op)}` (torch._decomp)")


def _torch_ref(op: Any) -> Rewrite | None:
    import torch._refs

    if op._overloadname != "default" or op._schema.name.split("::")[0] != "aten":
        return None
    fn = getattr(torch._refs, op._schema.name.split("::")[1], None)
    if not callable(fn):
        return None
    return Rewrite(name=f"refs.{_short(op)}", culprits=(mlir_name(op),),
                   entries=((str(op), fn),), source=TORCH_REFS,
                   method=f"torch's reference implementation of `{mlir_name(op)}` "
                          "(torch._refs)")


def candidates(culprit: str) -> list[Rewrite]:
    """The rewrites that may answer the op a culprit names (`aten.erfinv`), best first."""
    found = [r for r in LIBRARY.values() if r.answers(culprit)]
    op = overload_of(culprit)
    if isinstance(op, torch._ops.OpOverload):
        found += [r for r in (_torch_decomp(op), _torch_ref(op)) if r is not None]
    return found


def by_name(name: str) -> Rewrite | None:
    """The rewrite `name` names: a library one, or torch's entry for an op."""
    if name in LIBRARY:
        return LIBRARY[name]
    prefix, _, op_name = name.partition(".")
    if prefix not in _PREFIXES or not op_name:
        return None
    op = overload_of(f"aten.{op_name}")
    if not isinstance(op, torch._ops.OpOverload):
        return None
    return _torch_decomp(op) if prefix == "decomp" else _torch_ref(op)


__all__ = ["by_name", "candidates"]

"""Custom ops that carry a Python implementation, decomposed into aten ops before the import.

A library can wrap code in an opaque op of its own (`torch.library.custom_op`): torch.export
keeps the op as one node, and torch-mlir, which knows no such op, stops there
(`torch.operator "transformers.grouped_mm_fallback"`). When the op comes with a Python
implementation, that implementation says what it computes: `run_decompositions` traces it in
place of the node, in the same `ExportedProgram.run_decompositions` as torch-mlir's own
decompositions (a second run cannot re-trace the `prims` ops the first one leaves), so what
reaches the importer are real aten ops, each of which a backend lowers or names at its line.

An implementation that reads tensor values as Python numbers cannot be traced into a graph
(`transformers`' grouped matmul fallback loops over `offs.tolist()`, as 43 mixture-of-experts
architectures use it on CPU). For such an op, `EQUIVALENTS` holds a definition of the same
function in aten ops that does not depend on values; tests/worker/test_custom_ops.py checks each
against the library's own implementation. An op with neither (or whose tracing fails) is left
as it is: it stays a culprit of its own, at its line.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import Any

import torch


def grouped_mm_by_row(input: torch.Tensor, weight: torch.Tensor,
                      offs: torch.Tensor) -> torch.Tensor:
    """`transformers::grouped_mm_fallback(input, weight, offs)` without reading `offs`' values.

    Rows `offs[i-1]:offs[i]` of `input` (S, K) are multiplied by `weight[i]` (E, K, N); rows
    past `offs[-1]` stay zero (transformers/integrations/moe.py, `_grouped_mm_fallback`). Each
    row's group is the number of offsets at or below it; every group's product is computed and
    the row's own kept (a one-hot sum: exact, the other terms are zeros).
    """
    rows = torch.arange(input.shape[0], device=input.device)
    group = (rows[:, None] >= offs[None, :]).sum(dim=1)
    experts = torch.arange(weight.shape[0], device=input.device)
    one_hot = (group[:, None] == experts[None, :]).to(input.dtype)
    per_group = torch.einsum("sk,ekn->sen", input, weight)
    return (per_group * one_hot[:, :, None]).sum(dim=1)


# Custom op (namespace::name) → an equivalent definition in aten ops that needs no values.
EQUIVALENTS: dict[str, Callable[..., Any]] = {
    "transformers::grouped_mm_fallback": grouped_mm_by_row,
}


def _custom_ops(program: Any) -> list[Any]:
    """The OpOverloads of the graph outside torch's own namespaces, in first-use order."""
    found: list[Any] = []
    for node in program.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        if target.namespace not in ("aten", "prims", "_ops", "higher_order") \
                and target not in found:
            found.append(target)
    return found


def _implementations(op: Any) -> list[Callable[..., Any]]:
    """What `op` can be traced through, best first: a value-independent equivalent, then the
    Python function it was defined with."""
    qualname = op._schema.name
    out = [EQUIVALENTS[qualname]] if qualname in EQUIVALENTS else []
    from torch._library import custom_ops

    opdef = custom_ops.OPDEFS.get(qualname)
    init_fn = getattr(opdef, "_init_fn", None)
    if callable(init_fn):
        out.append(init_fn)
    return out


def run_decompositions(program: Any, table: dict[Any, Callable[..., Any]]) -> Any:
    """`program.run_decompositions(table)`, with every custom op that has a traceable
    implementation decomposed through it as well. Raises what the run with `table` alone
    raises; an op whose tracing fails is kept (its alternatives tried first)."""
    accepted: dict[Any, Callable[..., Any]] = {}
    result = None
    for op in _custom_ops(program):
        for impl in _implementations(op):
            noise = io.StringIO()  # torch prints graph dumps on failed traces
            try:
                with contextlib.redirect_stdout(noise), contextlib.redirect_stderr(noise):
                    result = program.run_decompositions({**table, **accepted, op: impl})
            except Exception:  # data-dependent code, unsupported ops: try the next one
                continue
            accepted[op] = impl
            break
    # The last run that succeeded holds every accepted op: it is the answer.
    return result if result is not None else program.run_decompositions(table)


__all__ = ["EQUIVALENTS", "grouped_mm_by_row", "run_decompositions"]

"""Scatter ops get a non-negative `dim` before any pass sees them.

torch-mlir 20261001's TorchToTMTensor (`ConvertAtenScatterOp`, for `aten.scatter.src` and
`aten.scatter_add`, and `ConvertAtenScatterReduceTwoOp`) hands the constant `dim` straight to
`convertTorchScatterIndexAndSrcToTMScatterIndexAndSrc`, which writes `yieldVals[dim]` without
`toPositiveDim`: `dim=-1` writes before the vector's start and the process dies (SIGSEGV, or
SIGABRT with "LLVM ERROR: out of memory"), in plain torch-mlir too. `torch.scatter(x, -1, idx,
v)` is how every mixture-of-experts router in `transformers` masks its chosen experts (PhiMoE,
DeepSeek-V3.2, GLM-MoE-DSA, Mistral-Large-4, ...), and GroupViT's hard softmax scatters on -1.
Other conversions of the same file normalize their dim (sort, cumsum, kthvalue); these do not
(lib/Conversion/TorchToTMTensor/TorchToTMTensor.cpp, llvm/torch-mlir main as of 2026-08).

`positive_scatter_dims` rewrites, in the imported module, each scatter op whose `dim` is a
negative constant to use `dim + rank` instead: the same op, a constant that no conversion
misreads. Drop this module when a pinned torch-mlir normalizes the dim there (a negative-dim
`torch.scatter` then lowers to Linalg in plain torch-mlir).
"""

from __future__ import annotations

import re
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d

# Every scatter whose operands start (self, dim, index, ...), before and after decomposition.
SCATTER_OPS = frozenset({
    "torch.aten.scatter.src", "torch.aten.scatter.value", "torch.aten.scatter.reduce",
    "torch.aten.scatter.value_reduce", "torch.aten.scatter_add",
    "torch.aten.scatter_reduce.two",
})
_SHAPE = re.compile(r"^!torch\.vtensor<\[([^\]]*)\]")


def _rank(value: Any) -> int | None:
    match = _SHAPE.match(str(value.type))
    if match is None:
        return None
    dims = match.group(1).strip()
    return len(dims.split(",")) if dims else 0


def _constant_int(value: Any) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "torch.constant.int":
        return None
    return int(ir.IntegerAttr(owner.attributes["value"]).value)


def positive_scatter_dims(module_op: Any) -> int:
    """Give every scatter op with a negative constant `dim` its non-negative equivalent, in
    place; the number of ops changed."""
    found: list[tuple[Any, int]] = []

    def visit(op: Any) -> ir.WalkResult:
        op = op.operation
        if op.name in SCATTER_OPS and len(op.operands) > 2:
            dim, rank = _constant_int(op.operands[1]), _rank(op.operands[0])
            if dim is not None and rank is not None and -rank <= dim < 0:
                found.append((op, dim + rank))
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    with module_op.context:
        for op, dim in found:
            with ir.InsertionPoint(op), op.location:
                positive = torch_d.ConstantIntOp(
                    ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dim))
            op.operands[1] = positive.result
    return len(found)


__all__ = ["SCATTER_OPS", "positive_scatter_dims"]

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

from typing import Any

from torch_mlir_lens.worker.ir.ir_constants import (
    constant_int,
    ops_named,
    set_operand,
    static_shape,
)

# Every scatter whose operands start (self, dim, index, ...), before and after decomposition.
SCATTER_OPS = frozenset({
    "torch.aten.scatter.src", "torch.aten.scatter.value", "torch.aten.scatter.reduce",
    "torch.aten.scatter.value_reduce", "torch.aten.scatter_add",
    "torch.aten.scatter_reduce.two",
})


def positive_scatter_dims(module_op: Any) -> int:
    """Give every scatter op with a negative constant `dim` its non-negative equivalent, in
    place; the number of ops changed."""
    changed = 0
    for op in ops_named(module_op, SCATTER_OPS):
        if len(op.operands) < 3:
            continue
        dim, shape = constant_int(op.operands[1]), static_shape(op.operands[0])
        if dim is not None and shape is not None and -len(shape) <= dim < 0:
            set_operand(op, 1, dim + len(shape))
            changed += 1
    return changed


__all__ = ["SCATTER_OPS", "positive_scatter_dims"]

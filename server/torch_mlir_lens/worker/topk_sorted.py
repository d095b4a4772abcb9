"""`topk(..., sorted=False)` asked for as `sorted=True`, which torch-mlir lowers.

torch-mlir 20261001 lowers `aten.topk` only with `sorted=True`: its decomposition into a sort
and a slice (`DecomposeAtenTopkOp`, lib/Dialect/Torch/Transforms/DecomposeComplexOps.cpp,
"unimplemented: sorted value arg must be set to True", unchanged on llvm/torch-mlir main as of
2026-08) and every backend reject the unsorted form. Routers of mixture-of-experts models pick
their experts with `torch.topk(scores, k, sorted=False)` (DeepSeek-V3.2, GLM-MoE-DSA, ...), so
each of them failed on `aten.topk` on every backend.

`sorted=False` leaves the order of the k results unspecified; the sorted order is one of the
orders it allows, so `sorted_topk` rewrites the constant in the imported module and the op
lowers. (Verify compares with eager PyTorch, whose unsorted order may differ: a module that
returns the unsorted results as they are can then differ in order only.) Drop this module when
a pinned torch-mlir lowers `sorted=False`.
"""

from __future__ import annotations

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d

TOPK = "torch.aten.topk"
_SORTED = 4  # operands: self, k, dim, largest, sorted


def _is_false(value: Any) -> bool:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "torch.constant.bool":
        return False
    return not ir.BoolAttr(owner.operation.attributes["value"]).value


def sorted_topk(module_op: Any) -> int:
    """Make every `aten.topk` with a constant `sorted=False` ask for sorted results, in place;
    the number of ops changed."""
    found: list[Any] = []

    def visit(op: Any) -> ir.WalkResult:
        op = op.operation
        if op.name == TOPK and len(op.operands) > _SORTED and _is_false(op.operands[_SORTED]):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    with module_op.context:
        for op in found:
            with ir.InsertionPoint(op), op.location:
                true = torch_d.ConstantBoolOp(ir.BoolAttr.get(True))
            op.operands[_SORTED] = true.result
    return len(found)


__all__ = ["sorted_topk"]

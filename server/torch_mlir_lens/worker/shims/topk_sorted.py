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

from torch_mlir_lens.worker.ir.ir_constants import constant_bool, ops_named, set_operand

TOPK = "torch.aten.topk"
_SORTED = 4  # operands: self, k, dim, largest, sorted


def sorted_topk(module_op: Any) -> int:
    """Make every `aten.topk` with a constant `sorted=False` ask for sorted results, in place;
    the number of ops changed."""
    changed = 0
    for op in ops_named(module_op, frozenset({TOPK})):
        if len(op.operands) > _SORTED and constant_bool(op.operands[_SORTED]) is False:
            set_operand(op, _SORTED, True)
            changed += 1
    return changed


__all__ = ["sorted_topk"]

"""`slice_scatter` bounds clamped to the sliced dimension before StableHLO sees them.

torch-mlir 20261001's TorchToStablehlo (`ConvertAtenOp<AtenSliceScatterOp>`,
lib/Conversion/TorchToStablehlo/GatherScatter.cpp, unchanged on llvm/torch-mlir main as of
2026-08) builds the list of scattered indices by counting from `start` to `end` without
clamping `end` to the dimension. `x[:, 1:] = y` gives `end = 2**63 - 1` ("to the end"), and
the conversion allocates until the process throws `std::bad_alloc` (Funnel Transformer's
attention shifts its scores so). Linalg and TOSA clamp it themselves.

`clamped_slice_scatters` rewrites, in the imported module, each `slice_scatter` whose constant
`end` (or `start`) lies past a static dimension to the dimension's size: the same slice.
Drop this module when a pinned torch-mlir clamps the bounds there (such a module then lowers
to StableHLO in plain torch-mlir).
"""

from __future__ import annotations

from typing import Any

from torch_mlir_lens.worker.ir.ir_constants import (
    constant_int,
    ops_named,
    set_operand,
    static_shape,
)

SLICE_SCATTER = "torch.aten.slice_scatter"
_DIM, _START, _END = 2, 3, 4  # operands: self, src, dim, start, end, step


def clamped_slice_scatters(module_op: Any) -> int:
    """Clamp the constant bounds of every `slice_scatter` to its static dimension, in place;
    the number of bounds changed."""
    changed = 0
    for op in ops_named(module_op, frozenset({SLICE_SCATTER})):
        if len(op.operands) <= _END:
            continue
        shape, dim = static_shape(op.operands[0]), constant_int(op.operands[_DIM])
        if shape is None or dim is None or not -len(shape) <= dim < len(shape):
            continue
        size = shape[dim]
        if size is None:
            continue
        for index in (_START, _END):
            bound = constant_int(op.operands[index])
            if bound is not None and bound > size:
                set_operand(op, index, size)
                changed += 1
    return changed


__all__ = ["clamped_slice_scatters"]

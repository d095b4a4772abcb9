"""Reading and replacing the constant operands of Torch-dialect ops (for the shims that fix
constants torch-mlir misreads: scatter_dims.py, topk_sorted.py, slice_bounds.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d

_SHAPE = re.compile(r"^!torch\.vtensor<\[([^\]]*)\]")


def static_shape(value: Any) -> list[int | None] | None:
    """The sizes of a `!torch.vtensor` value (None for a dynamic one), None if unranked."""
    match = _SHAPE.match(str(value.type))
    if match is None:
        return None
    dims = match.group(1).strip()
    return [None if d.strip() == "?" else int(d) for d in dims.split(",")] if dims else []


def _owner(value: Any, name: str) -> Any | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.operation.name != name:
        return None
    return owner.operation


def constant_int(value: Any) -> int | None:
    """The value of a `torch.constant.int`, else None."""
    owner = _owner(value, "torch.constant.int")
    return None if owner is None else int(ir.IntegerAttr(owner.attributes["value"]).value)


def constant_bool(value: Any) -> bool | None:
    """The value of a `torch.constant.bool`, else None."""
    owner = _owner(value, "torch.constant.bool")
    return None if owner is None else bool(ir.BoolAttr(owner.attributes["value"]).value)


def ops_named(module_op: Any, names: frozenset[str]) -> list[Any]:
    """The operations of `module_op` whose name is in `names`, in walk order."""
    found: list[Any] = []

    def visit(op: Any) -> ir.WalkResult:
        if op.operation.name in names:
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    return found


def set_operand(op: Any, index: int, value: int | bool) -> None:
    """Make operand `index` of `op` a new `torch.constant.int`/`.bool` (inserted before it)."""
    make: Callable[[], Any]
    if isinstance(value, bool):
        make = lambda: torch_d.ConstantBoolOp(ir.BoolAttr.get(value))  # noqa: E731
    else:
        make = lambda: torch_d.ConstantIntOp(  # noqa: E731
            ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value))
    with op.context, ir.InsertionPoint(op), op.location:
        op.operands[index] = make().result


__all__ = ["constant_bool", "constant_int", "ops_named", "set_operand", "static_shape"]

"""Does an op lower with the rest of its source line? (A check for in-context leftovers.)

A conversion leaves an op in place when an operand comes from an op that stayed Torch (the
`aten.cat` of slices of an `fft` result), and the op alone is no test either: out of its line,
its operand types are less known (the slices' `?` sizes are refined only next to them). The
op is tried together with the ops of its line that are not rejected themselves (same location:
one Python line), values from elsewhere becoming function arguments, constants copied along.
"""

from __future__ import annotations

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func as func_d

from torch_mlir_lens.rules import targets
from torch_mlir_lens.worker.culprits import illegal_ops
from torch_mlir_lens.worker.culprits.illegal_ops import op_name
from torch_mlir_lens.worker.ir.mlir_diagnostics import pipeline_errors


def _tensor(value: Any) -> bool:
    return str(value.type).startswith("!torch.vtensor")


class _LineCopy:
    """Copies ops (in program order) into a new function, values from elsewhere as arguments."""

    def __init__(self, ops: list[Any]) -> None:
        self.ops = [op.operation for op in ops]
        self.mapping: list[tuple[Any, Any]] = []
        self.args: list[Any] = []

    def _inside(self, owner: Any) -> bool:
        return not isinstance(owner, ir.Block) and any(owner == op for op in self.ops)

    def _lookup(self, value: Any) -> Any | None:
        return next((new for old, new in self.mapping if old == value), None)

    def _needs_arg(self, value: Any) -> bool:
        owner = value.owner
        return not self._inside(owner) and not illegal_ops.is_constant_op(owner) and not any(
            value == a for a in self.args)

    def collect_args(self) -> None:
        for op in self.ops:
            for v in op.operands:
                owner = v.owner
                if not isinstance(owner, ir.Block) and op_name(owner) == (
                        "torch.prim.ListConstruct") and not self._inside(owner):
                    self.args.extend(e for e in owner.operation.operands if self._needs_arg(e))
                elif self._needs_arg(v):
                    self.args.append(v)

    def value(self, v: Any) -> Any:
        found = self._lookup(v)
        if found is not None:
            return found
        owner = v.owner.operation  # a constant or a list built elsewhere: copy it here
        for operand in owner.operands:
            self.value(operand)
        clone = owner.clone()
        for i, operand in enumerate(owner.operands):
            clone.operands[i] = self.value(operand)
        self.mapping.extend(zip(owner.results, clone.results, strict=True))
        return self._lookup(v)

    def outputs(self) -> list[Any]:
        results = [r for op in self.ops for r in op.results if _tensor(r)]
        escaping = [r for r in results if any(not self._inside(u.owner) for u in r.uses)]
        return escaping or [r for r in results if not list(r.uses)]

    def build(self) -> Any:
        self.collect_args()
        outputs = self.outputs()
        ctx = self.ops[0].context
        with ctx, ir.Location.unknown(ctx):
            module = ir.Module.create()
            with ir.InsertionPoint(module.body):
                ftype = ir.FunctionType.get([a.type for a in self.args],
                                            [r.type for r in outputs])
                fn = func_d.FuncOp("line", ftype)
                block = fn.add_entry_block()
                with ir.InsertionPoint(block):
                    self.mapping.extend(zip(self.args, block.arguments, strict=True))
                    for op in self.ops:
                        operands = [self.value(v) for v in op.operands]
                        clone = op.clone()
                        for i, new in enumerate(operands):
                            clone.operands[i] = new
                        self.mapping.extend(zip(op.results, clone.results, strict=True))
                    func_d.ReturnOp([self.value(r) for r in outputs])
        return module


def lowers_with_its_line(ops: list[Any], suspects: list[int], rejected: set[int],
                         target: str) -> list[bool]:
    """For each index in `suspects` (into `ops`, a walk of one module): whether `target`'s
    pipeline lowers that op together with the ops of its line that are not in `rejected`.
    Every copy is built before any pass runs (no handle of `ops` is used after a run)."""
    smalls: list[Any] = []
    for index in suspects:
        where = str(ops[index].location)
        line = [op for i, op in enumerate(ops)
                if (i == index or i not in rejected) and illegal_ops.is_candidate(op_name(op))
                and not illegal_ops.is_constant_op(op) and str(op.location) == where]
        try:
            smalls.append(_LineCopy(line).build())
        except (RuntimeError, ValueError, KeyError):
            smalls.append(None)
    pipeline = targets.BACKEND_PIPELINES[target]
    return [small is not None and pipeline_errors(small.operation, pipeline) is None
            for small in smalls]


__all__ = ["lowers_with_its_line"]

"""The reference for the precision suite: each source line lowered alone with plain torch-mlir.

For every user line of a Torch-backend module, the ops at that line are copied into a function
of their own (values from other lines become arguments, constants are copied along) and
torch-mlir's backend pipeline runs on it, as it comes (no listing, no outlining, no grouping).
The line "fails" when that pipeline fails. This uses nothing of the lens' own failure handling:
only the op → line assignment (innermost user frame), which the editor shows anyway.
"""

from __future__ import annotations

from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func as func_d
from torch_mlir.passmanager import PassManager

from torch_mlir_lens.rules.targets import TARGETS
from torch_mlir_lens.worker.ir.locations import LocationResolver
from torch_mlir_lens.worker.ir.mlir_diagnostics import captured

Line = tuple[str, int]


def _name(op: Any) -> str:
    return str(op.operation.name)


def _is_constant(owner: Any) -> bool:
    if isinstance(owner, ir.Block):
        return False
    name = _name(owner)
    if name.startswith("torch.constant.") or name == "torch.vtensor.literal":
        return True
    if name == "torch.prim.ListConstruct":
        return all(_is_constant(v.owner) for v in owner.operation.operands)
    return False


def _walk(module_op: Any) -> list[Any]:
    ops: list[Any] = []

    def visit(op: Any) -> ir.WalkResult:
        ops.append(op)
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    return ops


def ops_by_line(torch_module: Any, resolver: LocationResolver) -> dict[Line, list[Any]]:
    """The non-constant ops of `@main` at each user line, in program order."""
    out: dict[Line, list[Any]] = {}
    for op in _walk(torch_module):
        name = _name(op)
        if not name.startswith("torch.") or _is_constant(op):
            continue
        frames = resolver.user_frames(str(op.location))
        if frames:
            out.setdefault(frames[0], []).append(op)
    return out


class _Copier:
    """Copies a line's ops into a new function, mapping old values to new ones."""

    def __init__(self, ops: list[Any]) -> None:
        self.ops = [op.operation for op in ops]
        self.mapping: list[tuple[Any, Any]] = []
        self.args: list[Any] = []

    def inside(self, owner: Any) -> bool:
        return not isinstance(owner, ir.Block) and any(owner == op for op in self.ops)

    def lookup(self, value: Any) -> Any | None:
        return next((new for old, new in self.mapping if old == value), None)

    def outer_values(self) -> None:
        """Arguments: values used at the line but made elsewhere (lists unpacked)."""
        for op in self.ops:
            for v in op.operands:
                owner = v.owner
                if self.inside(owner) or _is_constant(owner):
                    continue
                if not isinstance(owner, ir.Block) and _name(owner) == "torch.prim.ListConstruct":
                    for e in owner.operation.operands:
                        if not self.inside(e.owner) and not _is_constant(e.owner) and not any(
                                e == a for a in self.args):
                            self.args.append(e)
                elif not any(v == a for a in self.args):
                    self.args.append(v)

    def value(self, v: Any) -> Any:
        found = self.lookup(v)
        if found is not None:
            return found
        owner = v.owner.operation  # a constant or a list made on another line: copy it
        for operand in owner.operands:
            self.value(operand)
        clone = owner.clone()
        for i, operand in enumerate(owner.operands):
            clone.operands[i] = self.value(operand)
        self.mapping.extend(zip(owner.results, clone.results, strict=True))
        return self.lookup(v)

    def outputs(self) -> list[Any]:
        """Tensor results used after the line (or, if none, those the line does not use)."""
        results = [r for op in self.ops for r in op.results
                   if str(r.type).startswith("!torch.vtensor")]
        escaping = [r for r in results if any(not self.inside(u.owner) for u in r.uses)]
        return escaping or [r for r in results if not list(r.uses)]


def line_module(ops: list[Any]) -> Any:
    """A module whose one function holds copies of `ops` (one line's ops)."""
    ctx = ops[0].context
    copier = _Copier(ops)
    copier.outer_values()
    outputs = copier.outputs()
    with ctx, ir.Location.unknown(ctx):
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            ftype = ir.FunctionType.get([a.type for a in copier.args],
                                        [r.type for r in outputs])
            fn = func_d.FuncOp("line", ftype)
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                copier.mapping.extend(zip(copier.args, block.arguments, strict=True))
                for op in copier.ops:
                    operands = [copier.value(v) for v in op.operands]
                    clone = op.clone()
                    for i, new in enumerate(operands):
                        clone.operands[i] = new
                    copier.mapping.extend(zip(op.results, clone.results, strict=True))
                func_d.ReturnOp([copier.value(r) for r in outputs])
    return module


def failing_lines(torch_module: Any, target: str, resolver: LocationResolver) -> set[Line]:
    """The user lines whose ops `target`'s plain backend pipeline rejects when lowered alone."""
    pipeline = TARGETS[target].backend_pipeline
    assert pipeline is not None
    small = {line: line_module(ops) for line, ops in ops_by_line(torch_module, resolver).items()}
    bad = set()
    for line, module in small.items():
        ctx = module.context
        with ctx, captured(ctx):
            try:
                PassManager.parse(pipeline, context=ctx).run(module.operation)
            except ir.MLIRError:
                bad.add(line)
    return bad

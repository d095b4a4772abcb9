"""One MLIR module: the parent's `main` calling one private function per group of blocks.

The parent program is imported as usual; each group's function is imported once (its raw MLIR
kept with the traced block, `block_cache.py`) into the same context and appended as
`func.func private @<Block>`; every `torch.operator "torch.torch_mlir_lens_blocks.call_*"` of
`main` becomes `func.call @<Block>(inputs..., weights...)` at the same location (the parent's
line), its block's weights frozen in as literals just before it, as the FX importer freezes
any weight (`literals.py`: elided when the module was built without them). The call's types
must be the function's, else the stitch is refused.

Lowering such a module (`torch-mlir 20261001`, checked):
- the Torch pipeline begins with `inline`: the calls carry `no_inline` through it, removed
  after (`protect_calls`, `release_calls`);
- Linalg and TOSA lower every function and keep the calls, but their final contract check
  rejects any `func.call`: those pipelines run without it, and the check runs on a copy whose
  block calls are replaced by splat `arith.constant`s of their result types (legal on both;
  each function is then checked once, where inlining the calls would check every layer's
  copy), `backend_plan`;
- StableHLO's pipeline cannot be split (some of its passes are registered only inside it),
  and a user's pipeline is unknown: both run on the module with the calls inlined;
- the LLVM pipeline inlines first (`rules/targets.py`): bufferization's deallocation and the
  JIT's entry point want one function.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func as func_d

from torch_mlir_lens.rules import targets
from torch_mlir_lens.worker.blocks.stub import IMPORTED_PREFIX, GroupKernel
from torch_mlir_lens.worker.ir.crash_guard import note_weights
from torch_mlir_lens.worker.ir.literals import LiteralHooks
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.ir.mlir_diagnostics import captured

_VERIFY_PASS = re.compile(r"torch-verify-[\w-]+-backend-contract")
CHAIN_PREFIX = f"{IMPORTED_PREFIX}chain_"


class StitchError(Exception):
    """The imported pieces do not fit together (the caller lowers inline instead)."""


@dataclass
class Function:
    """One group's function as the stitch needs it."""

    symbol: str
    kernel: GroupKernel  # its number (the stitched op's first operand) and call sites
    raw: bytes  # the block function's raw MLIR (bytecode, `raw_function`)


def raw_function(program: Any, users: UserFiles) -> bytes:
    """The block program imported alone (a scratch context), as bytecode."""
    from torch_mlir_lens.worker.stages.torch_export import import_program

    module_op = import_program(program, users, func_name="block")
    buf = io.BytesIO()
    module_op.operation.write_bytecode(buf)
    return buf.getvalue()


def parse_module(raw: bytes, weight_bytes: int) -> Any:
    """A module kept as bytecode, parsed into a fresh context (as `import_program` makes
    one, its weights noted as the importer noted them)."""
    from torch_mlir_lens.worker.stages.pipeline import new_context

    ctx = new_context()
    try:
        with ctx, captured(ctx):
            module_op = ir.Module.parse(raw, context=ctx).operation
    except Exception as exc:  # MLIRError: the kept bytes do not parse
        raise StitchError(f"a kept module does not parse: {exc}") from exc
    note_weights(ctx, weight_bytes)
    return module_op


def readable_function(raw: bytes) -> bool:
    """Whether `raw` parses as one function, in a scratch context (bytes read from the
    persistent cache's folder are checked before anything is stitched with them)."""
    from torch_mlir_lens.worker.stages.pipeline import new_context

    ctx = new_context()
    try:
        with ctx, captured(ctx):
            piece = ir.Module.parse(raw, context=ctx)
    except Exception:  # MLIRError, or whatever the parser makes of foreign bytes
        return False
    return sum(op.name == "func.func" for op in _top_ops(piece)) == 1


def _top_ops(module_op: Any) -> list[Any]:
    return [op.operation for op in module_op.operation.regions[0].blocks[0].operations]


def _symbol(op: Any) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _stitched_ops(module_op: Any) -> list[Any]:
    found: list[Any] = []

    def visit(op: Any) -> Any:
        operation = op.operation
        if operation.name == "torch.operator":
            name = ir.StringAttr(operation.attributes["name"]).value
            if name.startswith(IMPORTED_PREFIX):
                found.append(operation)
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    return found


def _constant_operand(op: Any, index: int) -> tuple[int, Any]:
    """The value of the op's `index`-th operand, a `torch.constant.int`, and that op."""
    owner = op.operands[index].owner
    owner = getattr(owner, "operation", owner)
    if owner.name != "torch.constant.int":
        raise StitchError("a stitched call without its group and site numbers")
    return int(ir.IntegerAttr(owner.attributes["value"]).value), owner


def _weight_literal(tensor: Any, name: str, hooks: LiteralHooks, types: Any, ip: Any,
                    loc: Any) -> Any:
    """A `torch.vtensor.literal` of one weight, inserted at `ip`, at `loc` under the weight's
    name (`loc("layers.3.attn.q_proj.weight"(<the call's location>))`)."""
    attr = hooks.attribute(tensor)
    if attr is None:
        import numpy as np
        from torch_mlir.extras.fx_importer import create_mlir_tensor_type

        try:
            array = np.asarray(tensor.detach().cpu().numpy())
            attr = ir.DenseElementsAttr.get(array, type=create_mlir_tensor_type(tensor))
        except (TypeError, ValueError, RuntimeError) as exc:
            raise StitchError(f"a weight cannot be frozen in: {exc}") from exc
    return ir.Operation.create("torch.vtensor.literal",
                               results=[types.tensor_to_vtensor_type(tensor)],
                               attributes={"value": attr}, loc=ir.Location.name(name, loc),
                               ip=ip).result


def stitch(module_op: Any, functions: list[Function]) -> dict[str, int]:
    """Append each function to the imported parent `module_op` and turn its stitched ops into
    calls (in place). Returns the number of calls per symbol; StitchError when they do not
    fit."""
    ctx = module_op.context
    by_number: dict[int, tuple[str, Any]] = {}
    taken = {_symbol(op) for op in _top_ops(module_op) if "sym_name" in op.attributes}
    with ctx, ir.Location.unknown(ctx), captured(ctx):
        body = module_op.operation.regions[0].blocks[0]
        for function in functions:
            by_number[function.kernel.number] = (function.symbol, None)
            if function.symbol in taken:
                raise StitchError(f"two functions named @{function.symbol}")
            piece = ir.Module.parse(function.raw, context=ctx)
            found = [op for op in _top_ops(piece) if op.name == "func.func"]
            if len(found) != 1:
                raise StitchError(f"the block function @{function.symbol} did not import")
            copy = found[0].clone(ip=ir.InsertionPoint(body))
            copy.attributes["sym_name"] = ir.StringAttr.get(function.symbol)
            copy.attributes["sym_visibility"] = ir.StringAttr.get("private")
            taken.add(function.symbol)
            by_number[function.kernel.number] = (function.symbol, copy)
        kernels = {f.kernel.number: f.kernel for f in functions}
        counts = dict.fromkeys((f.symbol for f in functions), 0)
        hooks, types = LiteralHooks(), _type_cache(ctx)
        for op in _stitched_ops(module_op):
            chain = ir.StringAttr(op.attributes["name"]).value.startswith(CHAIN_PREFIX)
            numbers = [_constant_operand(op, i) for i in range(4 if chain else 2)]
            number, site = numbers[0][0], numbers[1][0]
            count, carried = (numbers[2][0], numbers[3][0]) if chain else (1, 0)
            symbol, callee = by_number.get(number, ("", None))
            sites = kernels[number].sites if callee is not None else {}
            if any(site + i not in sites for i in range(count)):
                raise StitchError(f"a call of block group {number}, which has no function")
            ip = ir.InsertionPoint(op)
            inputs = list(op.operands)[len(numbers):]
            for i in range(count):  # a chain: each block on the previous one's result
                kernel = kernels[number]
                weights = [_weight_literal(t, name, hooks, types, ip, op.location)
                           for t, name in zip(kernel.weights(site + i),
                                              kernel.weight_names(site + i), strict=True)]
                operands = [*inputs, *weights]
                _check_types(operands, op, callee, symbol)
                call = func_d.CallOp([r.type for r in op.results],
                                     ir.FlatSymbolRefAttr.get(symbol), operands, ip=ip,
                                     loc=op.location)
                call.operation.attributes["no_inline"] = ir.UnitAttr.get()
                inputs[carried] = call.results[0]
            for old, new in zip(op.results, call.results, strict=True):
                old.replace_all_uses_with(new)
            op.erase()
            _erase_unused([constant for _value, constant in numbers])
            counts[symbol] += count
    note_weights(ctx, hooks.stats["bytes"])
    return counts


def _erase_unused(ops: list[Any]) -> None:
    """Erase each op of `ops` (some may be one op) whose results nobody uses."""
    distinct: list[Any] = []
    for op in ops:  # compared while all are alive: an erased op cannot be compared
        if not any(op == other for other in distinct):
            distinct.append(op)
    for op in distinct:
        if not any(list(result.uses) for result in op.results):
            op.erase()


def _type_cache(ctx: ir.Context) -> Any:
    from torch_mlir.extras.fx_importer import ContextCache

    return ContextCache(ctx)


def _check_types(operands: list[Any], op: Any, callee: Any, symbol: str) -> None:
    kind = ir.FunctionType(ir.TypeAttr(callee.attributes["function_type"]).value)
    results = [r.type for r in op.results]
    if list(kind.inputs) != [v.type for v in operands] or list(kind.results) != results:
        raise StitchError(f"the call of @{symbol} does not have the function's types")


def _calls(module_op: Any) -> list[Any]:
    found: list[Any] = []

    def visit(op: Any) -> Any:
        if op.operation.name == "func.call":
            found.append(op.operation)
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    return found


def protect_calls(module_op: Any, symbols: set[str]) -> None:
    """Mark the calls of the block functions `no_inline` (the Torch pipeline inlines)."""
    with module_op.context:
        for call in _calls(module_op):
            if ir.FlatSymbolRefAttr(call.attributes["callee"]).value in symbols:
                call.attributes["no_inline"] = ir.UnitAttr.get()


def release_calls(module_op: Any) -> None:
    """Drop every call's `no_inline` (so a later `inline` may inline them)."""
    for call in _calls(module_op):
        if "no_inline" in call.attributes:
            del call.attributes["no_inline"]


@dataclass
class BackendPlan:
    """How a stitched module reaches a target: a pipeline to inline the calls first (or
    None), the pipeline, and the contract check to run apart after it (its pass, or None)."""

    prelude: str | None
    pipeline: str
    check: str | None


def backend_plan(target: str, pipeline: str, ctx: ir.Context) -> BackendPlan:
    """The plan for `target` (`pipeline`: the one a plain module would run)."""
    from torch_mlir_lens.worker.culprits.partial import no_verify_pipeline

    if target in ("linalg", "tosa"):
        split = no_verify_pipeline(target, ctx)
        verify = _VERIFY_PASS.search(str(pipeline_text(pipeline, ctx)))
        if split != targets.BACKEND_PIPELINES[target] and verify is not None:
            return BackendPlan(None, split, verify.group(0))
    return BackendPlan(targets.INLINE_CALLS_PIPELINE, pipeline, None)


def pipeline_text(pipeline: str, ctx: ir.Context) -> str:
    """The pipeline with its nested pipelines expanded."""
    from torch_mlir.passmanager import PassManager

    with ctx, captured(ctx):
        return str(PassManager.parse(pipeline, context=ctx))


def check_contract(module_op: Any, verify_pass: str) -> None:
    """Run the backend's contract check `verify_pass` on a copy of `module_op`; PassFailure
    (its errors at the block's lines) when it fails. The copy's calls become constants of
    their results' types (every function is then checked once, as it is), or, for results
    not all static tensors of numbers, are inlined."""
    from torch_mlir_lens.worker.stages.pipeline import run_pipeline

    copy = module_op.clone()
    emptied = _calls_emptied(copy)
    run_pipeline(copy, targets.contract_check_pipeline(verify_pass, inline=not emptied))


def _zero(kind: ir.RankedTensorType) -> ir.Attribute | None:
    """A splat zero of a static tensor type of floats or integers, else None."""
    element = kind.element_type
    if not kind.has_static_shape:
        return None
    if isinstance(element, ir.FloatType):
        return ir.DenseElementsAttr.get_splat(kind, ir.FloatAttr.get(element, 0.0))
    if isinstance(element, ir.IntegerType):
        return ir.DenseElementsAttr.get_splat(kind, ir.IntegerAttr.get(element, 0))
    return None


def _calls_emptied(module_op: Any) -> bool:
    """Replace each call of a function defined in the module by splat constants of its
    result types (in place); False, changing nothing, unless each result has one."""
    from torch_mlir.dialects import arith as arith_d

    defined = {_symbol(op) for op in _top_ops(module_op)
               if op.name == "func.func" and len(op.regions[0].blocks) > 0}
    calls = [c for c in _calls(module_op)
             if ir.FlatSymbolRefAttr(c.attributes["callee"]).value in defined]
    with module_op.context, ir.Location.unknown(module_op.context):
        zeros = [[_zero(r.type) if isinstance(r.type, ir.RankedTensorType) else None
                  for r in call.results] for call in calls]
        if any(z is None for row in zeros for z in row):
            return False
        for call, row in zip(calls, zeros, strict=True):
            ip = ir.InsertionPoint(call)
            for result, zero in zip(call.results, row, strict=True):
                constant = arith_d.ConstantOp(result.type, zero, ip=ip)
                result.replace_all_uses_with(constant.result)
            call.erase()
    return True


__all__ = ["BackendPlan", "Function", "StitchError", "backend_plan", "check_contract",
           "protect_calls", "raw_function", "release_calls", "stitch"]

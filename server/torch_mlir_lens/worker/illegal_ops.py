"""Every op a backend cannot lower, each at its user line.

MLIR reports only the first failure, often naming the wrong op (a `torch.constant.int` left
behind by the real culprit). Two recipes find them all:

- Leftovers (linalg, stablehlo): run only the conversion passes of the backend pipeline, without
  the final backend-contract check, and walk the module for torch ops that survived. The
  conversions use partial conversion, so an op without a pattern stays in place.
- Isolation (tosa, and the fallback when the leftover run itself fails): copy each torch op with
  its constant operands into a one-op function and run the whole backend pipeline on it.
  `convert-torch-to-tosa` marks ops explicitly illegal, so a leftover run fails at the first one.
  Heuristic: ops are tried out of context (same types, same constant operands).

Failures that name no op (verifier errors, asserts, ...) come back as "lowering-error"
diagnostics at their location's user line, or on the module when there is none.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func as func_d
from torch_mlir.passmanager import PassManager

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, Severity
from torch_mlir_lens.rules.targets import BACKEND_PIPELINES, LEFTOVER_PIPELINES, target_title
from torch_mlir_lens.worker.library_diags import add_library_frames
from torch_mlir_lens.worker.locations import LocationResolver
from torch_mlir_lens.worker.mlir_diagnostics import Diag, captured

# Ops that are never the culprit: constants and list plumbing are lowered with their users.
_SKIP_PREFIXES = ("torch.constant.", "torch_c.")
_SKIP_NAMES = {"torch.prim.ListConstruct", "torch.vtensor.literal"}
_CONSTANT_NAMES = {"torch.prim.ListConstruct", "torch.vtensor.literal"}
_ASSERT = "torch.runtime.assert"
_LEGALIZE = re.compile(r"failed to legalize operation '([^']+)'")
_OP_PREFIX = re.compile(r"^'([\w.]+)' op ")

ISOLATION_BUDGET_S = 30.0


@dataclass
class FoundOp:
    """A torch op a backend cannot lower."""

    name: str  # "torch.aten.roll" or, for torch.operator, "torch.operator aten.lgamma"
    location: str  # location text
    message: str
    index: int = -1  # the op's position in a walk of the module it was found in (-1: unknown)


def op_name(op: Any) -> str:
    """The op's name, for an Operation or an OpView (whose `.name` may be an attribute)."""
    return str(op.operation.name)


def is_candidate(name: str) -> bool:
    """A torch op that can be reported as unsupported (not a constant or list plumbing)."""
    return name.startswith("torch.") and not name.startswith(_SKIP_PREFIXES) and (
        name not in _SKIP_NAMES
    )


def _display_name(op: Any) -> str:
    name = op_name(op)
    if name == "torch.operator" and "name" in op.operation.attributes:
        return ir.StringAttr(op.operation.attributes["name"]).value  # e.g. "torch.aten.lgamma"
    return name


def _walk(module_op: Any) -> list[Any]:
    ops: list[Any] = []

    def visit(op: Any) -> ir.WalkResult:
        ops.append(op)
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    return ops


INDEX_ATTR = "torch_mlir_lens.index"  # tags ops with their walk position across a pass run


def leftover_ops(module_op: Any) -> list[FoundOp]:
    """Torch ops still in the module (after a conversion prefix), in program order."""
    found = []
    for op in _walk(module_op):
        if is_candidate(op_name(op)):
            attrs = op.operation.attributes
            index = ir.IntegerAttr(attrs[INDEX_ATTR]).value if INDEX_ATTR in attrs else -1
            found.append(FoundOp(_display_name(op), str(op.location), "", index))
    return found


def _tag_candidates(module_op: Any) -> None:
    """Tag every candidate op with its walk position, so that leftovers name their original."""
    with module_op.context:
        i64 = ir.IntegerType.get_signless(64)
        for index, op in enumerate(_walk(module_op)):
            if is_candidate(op_name(op)):
                op.operation.attributes[INDEX_ATTR] = ir.IntegerAttr.get(i64, index)


def torch_operator_ops(module_op: Any) -> list[FoundOp]:
    """`torch.operator` ops: aten ops torch-mlir does not know; illegal at the torch level."""
    return [
        FoundOp(_display_name(op), str(op.location), "")
        for op in _walk(module_op)
        if op_name(op) == "torch.operator"
    ]


def _run(module_op: Any, pipeline: str) -> list[Diag] | None:
    """Run a pipeline on a module; None on success, else its error diagnostics."""
    ctx = module_op.context
    with ctx, captured(ctx) as diags:
        try:
            PassManager.parse(pipeline, context=ctx).run(module_op.operation)
        except ir.MLIRError as exc:
            from torch_mlir_lens.worker.mlir_diagnostics import error_diags

            return error_diags(exc, diags)
    return None


def find_leftovers(torch_module: Any, target: str) -> list[FoundOp] | None:
    """Leftover recipe; None when it does not apply or its own run fails."""
    pipeline = LEFTOVER_PIPELINES.get(target)
    if pipeline is None:
        return None
    clone = torch_module.operation.clone()
    _tag_candidates(clone)
    # Some conversions (StableHLO) mark asserts illegal and would fail as a whole on the first
    # one: they are tried one by one instead, and the rest of the module as a leftover run.
    asserts = [op for op in _walk(clone) if op_name(op) == _ASSERT]
    for op in asserts:
        op.operation.erase()
    if _run(clone, pipeline) is not None:
        return None
    found = leftover_ops(clone)
    if asserts:
        originals = [(i, op) for i, op in enumerate(_walk(torch_module))
                     if op_name(op) == _ASSERT]
        smalls = [(i, str(op.location), isolate(op)) for i, op in originals]
        found.extend(FoundOp(_ASSERT, loc, "", i) for i, loc, small in smalls
                     if _run(small.operation, BACKEND_PIPELINES[target]) is not None)
        found.sort(key=lambda f: f.index)
    return found


def _is_constant_op(owner: Any) -> bool:
    if isinstance(owner, ir.Block):
        return False
    name = op_name(owner)
    if name.startswith("torch.constant.") or name == "torch.vtensor.literal":
        return True
    if name in _CONSTANT_NAMES:
        return all(_is_constant_op(v.owner) for v in owner.operation.operands)
    return False


def _strip_ssa(text: str) -> str:
    return re.sub(r"%[\w.$#-]+", "%", text.split(" loc(")[0])


def _isolation_key(op: Any) -> str:
    """Ops with the same name, types, attributes and constant operands behave the same."""
    parts = [op_name(op), str([str(r.type) for r in op.operation.results])]
    attrs = op.operation.attributes
    for i in range(len(attrs)):  # iterating yields names only in some binding versions
        named = attrs[i]
        parts.append(f"{named.name}={named.attr}")
    for v in op.operation.operands:
        owner = v.owner
        parts.append(_strip_ssa(str(owner)) if _is_constant_op(owner) else str(v.type))
    return "|".join(parts)


def _clone_constant(value: Any, mapping: list[tuple[Any, Any]]) -> Any:
    for old, new in mapping:
        if old == value:
            return new
    owner = value.owner.operation
    for v in owner.operands:
        _clone_constant(v, mapping)
    clone = owner.clone()
    for i, v in enumerate(owner.operands):
        clone.operands[i] = _lookup(v, mapping)
    for old_r, new_r in zip(owner.results, clone.results, strict=True):
        mapping.append((old_r, new_r))
    return _lookup(value, mapping)


def _lookup(value: Any, mapping: list[tuple[Any, Any]]) -> Any:
    for old, new in mapping:
        if old == value:
            return new
    raise KeyError("value not mapped")


def isolate(op: Any) -> Any:
    """A new module with one function that holds `op` and copies of its constant operands."""
    ctx = op.context
    operation = op.operation
    args: list[Any] = []
    for v in operation.operands:
        if not _is_constant_op(v.owner) and not any(v == a for a in args):
            args.append(v)
    results = [r for r in operation.results if str(r.type).startswith("!torch.vtensor")]
    with ctx, ir.Location.unknown(ctx):
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            ftype = ir.FunctionType.get([a.type for a in args], [r.type for r in results])
            fn = func_d.FuncOp("isolated", ftype)
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                mapping: list[tuple[Any, Any]] = list(zip(args, block.arguments, strict=True))
                for v in operation.operands:
                    if _is_constant_op(v.owner):
                        _clone_constant(v, mapping)
                clone = operation.clone()
                for i, v in enumerate(operation.operands):
                    clone.operands[i] = _lookup(v, mapping)
                by_result = dict(zip(range(len(operation.results)), clone.results, strict=True))
                keep = [by_result[i] for i, r in enumerate(operation.results) if r in results]
                func_d.ReturnOp(keep)
    return module


def find_by_isolation(torch_module: Any, target: str,
                      budget_s: float = ISOLATION_BUDGET_S) -> tuple[list[FoundOp], bool]:
    """Isolation recipe: ([failing ops], complete). Stops after `budget_s` seconds."""
    pipeline = BACKEND_PIPELINES[target]
    start = time.perf_counter()
    # Gather everything from the big module before running any pass (no stale handles).
    todo: list[tuple[str, str, str, Any, int]] = []
    for index, op in enumerate(_walk(torch_module)):
        name = op_name(op)
        if not is_candidate(name):
            continue
        todo.append((_display_name(op), str(op.location), _isolation_key(op), op, index))
    # Build every one-op module first, then run passes: no big-module handle is used after a run.
    smalls: dict[str, Any] = {}
    for _display, _loc, key, op, _index in todo:
        if key in smalls:
            continue
        try:
            smalls[key] = isolate(op)
        except (RuntimeError, ValueError, KeyError):
            smalls[key] = None  # cannot isolate: say nothing rather than guess
    todo_data = [(display, loc, key, index) for display, loc, key, _op, index in todo]
    del todo
    verdicts: dict[str, str | None] = {}
    found: list[FoundOp] = []
    complete = True
    for display, loc, key, index in todo_data:
        if key not in verdicts:
            if time.perf_counter() - start > budget_s:
                complete = False
                break
            small = smalls[key]
            errors = None if small is None else _run(small.operation, pipeline)
            verdicts[key] = None if errors is None else _first_line(errors[0].message)
        message = verdicts[key]
        if message is not None:
            found.append(FoundOp(display, loc, message, index))
    return found, complete


def find_unsupported(torch_module: Any, target: str) -> tuple[list[FoundOp], bool]:
    """Every op `target` rejects in `torch_module`: ([ops], complete). Leftovers first,
    isolation when that recipe does not apply or fails."""
    found = find_leftovers(torch_module, target)
    if found is not None:
        return found, True
    if target in BACKEND_PIPELINES:
        return find_by_isolation(torch_module, target)
    return [], True


def _first_line(message: str) -> str:
    return message.split("\n", 1)[0].split(": %", 1)[0].strip()


def _located(resolver: LocationResolver, loc: str) -> tuple[str | None, int | None]:
    frames = resolver.user_frames(loc)
    return (frames[0][0], frames[0][1]) if frames else (None, None)


def unsupported_diagnostics(found: list[FoundOp], target: str,
                            resolver: LocationResolver) -> list[LensDiagnostic]:
    """One "unsupported-op" diagnostic per (op, line), in program order."""
    title = target_title(target)
    out: list[LensDiagnostic] = []
    seen: set[tuple[str, str | None, int | None]] = set()
    for f in found:
        file, line = _located(resolver, f.location)
        key = (f.name, file, line)
        if key in seen:
            continue
        seen.add(key)
        # "failed to legalize ..." adds nothing (or names a constant left behind): drop it.
        detail = "" if not f.message or _LEGALIZE.search(f.message) else f" ({f.message})"
        out.append(LensDiagnostic(
            severity=Severity.ERROR, message=f"{f.name} cannot be lowered to {title}{detail}",
            kind=ErrorKind.UNSUPPORTED_OP, file=file, line=line, op=f.name, target=target,
        ))
    add_library_frames(out, [(f.name, f.location) for f in found], resolver)
    return out


def error_diagnostics(errors: list[Diag], target: str, resolver: LocationResolver,
                      kind: str = ErrorKind.LOWERING_ERROR) -> list[LensDiagnostic]:
    """MLIR error diagnostics as LensDiagnostics at their user line (or on the module)."""
    out: list[LensDiagnostic] = []
    for d in errors:
        file, line = _located(resolver, d.location)
        if file is None:
            for note in d.notes:
                file, line = _located(resolver, note.location)
                if file is not None:
                    break
        m = _LEGALIZE.search(d.message) or _OP_PREFIX.search(d.message)
        out.append(LensDiagnostic(
            severity=Severity.ERROR, message=f"{target_title(target)}: {_first_line(d.message)}",
            kind=kind, file=file, line=line, op=m.group(1) if m else None, target=target,
        ))
    return out


def _names_an_op(d: Diag) -> bool:
    return bool(_LEGALIZE.search(d.message))


def incomplete_warning(target: str) -> LensDiagnostic:
    """The warning added when the listing of unsupported ops ran out of time."""
    return LensDiagnostic(
        severity=Severity.WARNING, kind=ErrorKind.UNSUPPORTED_OP, target=target,
        message=f"listing of unsupported ops stopped after {ISOLATION_BUDGET_S:.0f} s; "
                "more ops may be unsupported",
    )


def list_unsupported(torch_module: Any, target: str, errors: list[Diag],
                     resolver: LocationResolver,
                     to_diagnostics: Callable[[list[FoundOp]], list[LensDiagnostic]] | None = None,
                     ) -> list[LensDiagnostic]:
    """Every op `target` cannot lower, plus the pipeline errors that name no op.

    `errors` are the diagnostics of the failed backend pipeline run on `torch_module`, which is
    left untouched (the recipes work on clones). `to_diagnostics` words the found ops (one
    diagnostic per op and line when not given).
    """
    found, complete = find_unsupported(torch_module, target)
    if to_diagnostics is not None and found:
        diags = to_diagnostics(found)
    else:
        diags = unsupported_diagnostics(found, target, resolver)
    # "failed to legalize" errors are symptoms of the ops listed above; keep the others.
    known = {f.message for f in found}
    others = [d for d in errors
              if not (found and _names_an_op(d)) and _first_line(d.message) not in known]
    diags.extend(error_diagnostics(others, target, resolver))
    if not complete:
        diags.append(incomplete_warning(target))
    return diags


def list_torch_level(raw_module: Any, errors: list[Diag],
                     resolver: LocationResolver, target: str) -> list[LensDiagnostic]:
    """Ops that fail before any backend: `torch.operator`s, plus errors that name no op."""
    found = torch_operator_ops(raw_module)
    diags = unsupported_diagnostics(found, target, resolver)
    for d in diags:
        short = d.op[len("torch."):] if d.op and d.op.startswith("torch.aten.") else d.op
        d.cause, d.ops = f"`{short}`", [d.op or ""]
        d.message = f"`{short}` cannot be lowered to {target_title(target)}: torch-mlir " \
                    "does not support it"
    others = [d for d in errors if not (found and _names_an_op(d))]
    diags.extend(error_diagnostics(others, target, resolver))
    return diags

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, Severity
from torch_mlir_lens.rules.targets import BACKEND_PIPELINES, LEFTOVER_PIPELINES, target_title
from torch_mlir_lens.worker.culprits import op_isolation
from torch_mlir_lens.worker.culprits.reasons import explained
from torch_mlir_lens.worker.ir.library_diags import add_library_frames, origins_text
from torch_mlir_lens.worker.ir.locations import LocationResolver
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag, pipeline_errors

# Ops that are never the culprit: constants and list plumbing are lowered with their users,
# a region's terminator with the op owning the region (a `while_loop`'s `torch.prim.Loop`).
_SKIP_PREFIXES = ("torch.constant.", "torch_c.")
_SKIP_NAMES = {"torch.prim.ListConstruct", "torch.vtensor.literal",
               "torch.prim.Loop.condition", "torch.prim.If.yield"}
_CONSTANT_NAMES = {"torch.prim.ListConstruct", "torch.vtensor.literal"}
_ASSERT = "torch.runtime.assert"
_LITERAL = "torch.vtensor.literal"
_LEGALIZE = re.compile(r"failed to legalize operation '([^']+)'")
_OP_PREFIX = re.compile(r"^'([\w.]+)' op ")
_IN_FUNCTION = re.compile(r" in function @[\w.$-]+")  # the module's @main or a copy's name

ISOLATION_BUDGET_S = 30.0


@dataclass
class FoundOp:
    """A torch op a backend cannot lower."""

    name: str  # "torch.aten.roll" or, for torch.operator, "torch.operator aten.lgamma"
    location: str  # location text
    message: str
    index: int = -1  # the op's position in a walk of the module it was found in (-1: unknown)
    lowers_alone: bool = False  # left over, yet it lowers alone: not a culprit by itself


def op_name(op: Any) -> str:
    """The op's name, for an Operation or an OpView (whose `.name` may be an attribute)."""
    return str(op.operation.name)


def is_candidate(name: str) -> bool:
    """A torch op that can be reported as unsupported (not a constant or list plumbing)."""
    return name.startswith("torch.") and not name.startswith(_SKIP_PREFIXES) and (
        name not in _SKIP_NAMES
    )


def display_name(op: Any) -> str:
    """The op's name; a `torch.operator` by the op it stands for (`torch.aten.lgamma`)."""
    name = op_name(op)
    if name == "torch.operator" and "name" in op.operation.attributes:
        return ir.StringAttr(op.operation.attributes["name"]).value  # e.g. "torch.aten.lgamma"
    return name


def walk_ops(module_op: Any) -> list[Any]:
    """Every op of a module, nested ones included, in walk order."""
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
    for op in walk_ops(module_op):
        if is_candidate(op_name(op)):
            attrs = op.operation.attributes
            index = ir.IntegerAttr(attrs[INDEX_ATTR]).value if INDEX_ATTR in attrs else -1
            found.append(FoundOp(display_name(op), str(op.location), "", index))
    return found


def _tag_candidates(module_op: Any) -> None:
    """Tag every candidate op with its walk position, so that leftovers name their original."""
    with module_op.context:
        i64 = ir.IntegerType.get_signless(64)
        for index, op in enumerate(walk_ops(module_op)):
            if is_candidate(op_name(op)):
                op.operation.attributes[INDEX_ATTR] = ir.IntegerAttr.get(i64, index)


def torch_operator_ops(module_op: Any, backend: str = "") -> list[FoundOp]:
    """`torch.operator` ops: aten ops torch-mlir does not know; illegal at the torch level.
    With a `backend`, each says why when a rule knows (`antialias=True`)."""
    return [
        FoundOp(display_name(op), str(op.location), explained("", op, backend) if backend else "",
                index)
        for index, op in enumerate(walk_ops(module_op))
        if op_name(op) == "torch.operator"
    ]


def find_leftovers(torch_module: Any, target: str) -> list[FoundOp] | None:
    """Leftover recipe; None when it does not apply or its own run fails. Each leftover is
    tried alone too: one that lowers so has `lowers_alone` set (its context left it over)."""
    pipeline = LEFTOVER_PIPELINES.get(target)
    if pipeline is None:
        return None
    clone = torch_module.operation.clone()
    _tag_candidates(clone)
    # Some conversions (StableHLO) mark asserts illegal and would fail as a whole on the first
    # one: they are tried one by one instead, and the rest of the module as a leftover run.
    asserts = [op for op in walk_ops(clone) if op_name(op) == _ASSERT]
    for op in asserts:
        op.operation.erase()
    if pipeline_errors(clone, pipeline) is not None:
        return None
    found = leftover_ops(clone)
    originals = walk_ops(torch_module)
    if asserts:
        found.extend(FoundOp(_ASSERT, str(op.location), "", i)
                     for i, op in enumerate(originals) if op_name(op) == _ASSERT)
        found.sort(key=lambda f: f.index)
    tried = [f for f in found if 0 <= f.index < len(originals)]
    verdicts, _complete = op_isolation.verdicts([originals[f.index] for f in tried], target)
    for f, verdict in zip(tried, verdicts, strict=True):
        if verdict == op_isolation.LOWERS:
            f.lowers_alone = True
        elif verdict:
            f.message = f.message or verdict
    # An assert is a leftover only when it fails alone: it was taken out of the leftover run
    # only because the conversion fails as a whole on the first one.
    return [f for f in found if f.name != _ASSERT or f.message]


def find_at_errors(torch_module: Any, target: str, errors: list[Diag],
                   *, in_context: bool = False) -> list[FoundOp]:
    """The ops at the location of a pipeline error (a verifier's complaint about what an op
    was converted to, an op a conversion rejected) that fail alone too; with `in_context`,
    also those that lower alone, marked so (what failed is their context)."""
    # location → the op an error names ("failed to legalize operation 'torch.aten.cat'"),
    # or None when it names none of ours (a verifier's complaint about a converted op)
    where: dict[str, set[str | None]] = {}
    for d in errors:
        if not _about_our_calls(d) and d.location != "loc(unknown)":
            m = _LEGALIZE.search(d.message)
            named = m.group(1) if m and m.group(1).startswith("torch.") else None
            where.setdefault(d.location, set()).add(named)
    ops = [(i, op) for i, op in enumerate(walk_ops(torch_module))
           if str(op.location) in where and _tried_at_error(op_name(op), where[str(op.location)])]
    verdicts, _complete = op_isolation.verdicts([op for _i, op in ops], target)
    messages = {d.location: _first_line(d.message) for d in errors}
    found = []
    for (i, op), verdict in zip(ops, verdicts, strict=True):
        location = str(op.location)
        if verdict:
            found.append(FoundOp(display_name(op), location, verdict, i))
        elif in_context and verdict == op_isolation.LOWERS and is_candidate(op_name(op)):
            found.append(FoundOp(display_name(op), location, messages.get(location, ""), i,
                                 lowers_alone=True))
    return found


def _tried_at_error(name: str, named: set[str | None]) -> bool:
    """Whether an op at an error's location is tried alone: a candidate the error names or
    that an error naming no op may be about; a literal only when an error names it (a
    constant torch.export folded a call into, `tril_indices(0, 0, 0)`'s empty `2x0`, that
    TOSA rejects; a constant left behind by a culprit lowers alone and is not reported)."""
    if is_candidate(name):
        return None in named or name in named
    return name == _LITERAL and name in named


def _about_our_calls(d: Diag) -> bool:
    """An error only about outlined calls (the backend contract rejects any call)."""
    return "backend contract" in d.message or "'func.call'" in d.message


def is_constant_op(owner: Any) -> bool:
    """Whether a value's owner is a constant, or an op computing only from constants."""
    if isinstance(owner, ir.Block):
        return False
    name = op_name(owner)
    if name.startswith("torch.constant.") or name == "torch.vtensor.literal":
        return True
    if name in _CONSTANT_NAMES:
        return all(is_constant_op(v.owner) for v in owner.operation.operands)
    return False


def find_by_isolation(torch_module: Any, target: str,
                      budget_s: float = ISOLATION_BUDGET_S) -> tuple[list[FoundOp], bool]:
    """Isolation recipe: ([failing ops], complete). Stops trying after `budget_s` seconds
    (verdicts cached from earlier modules still count)."""
    ops = [(index, op) for index, op in enumerate(walk_ops(torch_module))
           if is_candidate(op_name(op))]
    found_verdicts, complete = op_isolation.verdicts([op for _i, op in ops], target, budget_s)
    found: list[FoundOp] = []
    for (index, op), verdict in zip(ops, found_verdicts, strict=True):
        if verdict:  # neither lowers alone nor unknown
            found.append(FoundOp(display_name(op), str(op.location), verdict, index))
    return found, complete


def find_unsupported(torch_module: Any, target: str,
                     resolver: LocationResolver | None = None) -> tuple[list[FoundOp], bool]:
    """Every op `target` rejects in `torch_module`: ([ops], complete). Leftovers first,
    isolation when that recipe does not apply or fails; when the leftover run leaves nothing
    but the pipeline still fails (a verifier error after conversion), the ops at the error's
    location, then isolation; when nothing fails alone, the ops at the pipeline's errors,
    marked `lowers_alone`. With a `resolver`, an op without a user line borrows the location
    of its nearest neighbour that has one."""
    found = find_leftovers(torch_module, target)
    complete = True
    if found == []:  # nothing left over, yet the pipeline fails: look where it fails
        errors = pipeline_errors(torch_module.operation.clone(), BACKEND_PIPELINES[target])
        if errors:
            found = find_at_errors(torch_module, target, errors) or None
    if found is None:
        if target not in BACKEND_PIPELINES:
            return [], True
        found, complete = find_by_isolation(torch_module, target)
        if not found and complete:  # nothing fails alone: what fails is some op's context
            errors = pipeline_errors(torch_module.operation.clone(), BACKEND_PIPELINES[target])
            found = find_at_errors(torch_module, target, errors or [], in_context=True)
    if resolver is not None:
        borrow_locations(torch_module, found, resolver)
    return found, complete


def borrow_locations(module_op: Any, found: list[FoundOp], resolver: LocationResolver,
                     hops: int = 8) -> None:
    """Give each op of `found` that has no user frame (a size check torch.export made in its
    own code) the line of the nearest op that has one: its users first, then its operands'
    makers, at most `hops` steps away. Its location becomes `fused[own, neighbour's]`: the
    first call chain still names its own call, the first with a user frame is the line."""
    lost = [f for f in found if not resolver.user_frames(f.location)]
    if not lost:
        return
    ops = walk_ops(module_op)
    for f in lost:
        if not 0 <= f.index < len(ops):
            continue
        near = nearest_located(ops[f.index], resolver, hops)
        if near is not None:  # its own call chain first (it names the call), then the line
            f.location = f"loc(fused[{_inner(f.location)}, {_inner(near)}])"


def _inner(location: str) -> str:
    """`loc(X)` → `X`."""
    return location[4:-1] if location.startswith("loc(") and location.endswith(")") else location


def same_op_location(op_location: str, found_location: str) -> bool:
    """Whether an op's location is a found op's (itself, or the own part of a borrowed one)."""
    return found_location == op_location or found_location.startswith(
        f"loc(fused[{_inner(op_location)}, ")


def nearest_located(op: Any, resolver: LocationResolver, hops: int) -> str | None:
    """The location text of the op nearest to `op` that has a user frame (its users first,
    then its operands' makers, breadth first, at most `hops` steps away), else of a call of
    the function holding `op` (a repeated block of library code, traced once as a function:
    its ops are on the line that calls it, as they are with the block inline), or None."""
    return _nearest_in_function(op, resolver, hops) or caller_location(op, resolver)


def caller_location(op: Any, resolver: LocationResolver, depth: int = 4) -> str | None:
    """The location text of the first call, with a user frame, of the function holding `op`
    (through calls of calls, `depth` levels at most), or None (`op` is in `main`)."""
    function = op.operation.parent
    while function is not None and op_name(function) != "func.func":
        function = function.parent
    if function is None or "sym_name" not in function.attributes:
        return None
    symbol = ir.StringAttr(function.attributes["sym_name"]).value
    module = function.parent
    if module is None:
        return None
    for candidate in walk_ops(module):
        if op_name(candidate) != "func.call" or "callee" not in candidate.operation.attributes:
            continue
        if ir.FlatSymbolRefAttr(candidate.operation.attributes["callee"]).value != symbol:
            continue
        location = str(candidate.operation.location)
        if resolver.user_frames(location):
            return location
        if depth > 1:
            outer = caller_location(candidate, resolver, depth - 1)
            if outer is not None:
                return outer
    return None


def _nearest_in_function(op: Any, resolver: LocationResolver, hops: int) -> str | None:
    """`nearest_located` without looking past the function's own ops."""
    start = op.operation
    todo: list[tuple[Any, int]] = [(start, 0)]
    seen: list[Any] = []
    while todo and len(seen) < 256:
        current, depth = todo.pop(0)
        if any(current == s for s in seen):
            continue
        seen.append(current)
        location = str(current.location)
        if current != start and resolver.user_frames(location):
            return location
        if depth >= hops:
            continue
        users = [use.owner for result in current.results for use in result.uses]
        makers = [v.owner for v in current.operands]
        todo.extend((o.operation, depth + 1) for o in users + makers
                    if not isinstance(o, ir.Block) and op_name(o) != "func.func")
    return None


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
    found, complete = find_unsupported(torch_module, target, resolver)
    culprits = [f for f in found if not f.lowers_alone]
    if to_diagnostics is not None and culprits:
        diags = to_diagnostics(culprits)
    else:
        diags = unsupported_diagnostics(culprits, target, resolver)
    if not culprits:  # nothing fails alone: what is left over failed in its context
        diags.extend(context_diagnostics([f for f in found if f.lowers_alone], target,
                                         resolver))
    # "failed to legalize" errors are symptoms of the ops listed above; keep the others.
    known = {f.message for f in found}
    others = [d for d in errors
              if not (found and _names_an_op(d)) and _first_line(d.message) not in known]
    diags.extend(error_diagnostics(others, target, resolver))
    if not complete:
        diags.append(incomplete_warning(target))
    return drop_contract_errors(diags)


def context_diagnostics(found: list[FoundOp], target: str,
                        resolver: LocationResolver) -> list[LensDiagnostic]:
    """Ops a backend left unconverted in the module although each lowers alone: not
    culprits (nothing to port), but the reason this module fails, at their lines."""
    title = target_title(target)
    out: list[LensDiagnostic] = []
    for f in found:
        file, line = _located(resolver, f.location)
        short = f.name[len("torch."):] if f.name.startswith("torch.aten.") else f.name
        out.append(LensDiagnostic(
            severity=Severity.ERROR, kind=ErrorKind.LOWERING_ERROR, target=target,
            file=file, line=line, op=f.name,
            message=f"{title} left `{short}` unconverted in this module, although it lowers "
                    "alone: it fails only with the ops around it"
                    + (f" ({f.message})" if f.message and not _LEGALIZE.search(f.message)
                       else ""),
        ))
    return out


_CONTRACT = re.compile(r"backend contract")


def drop_contract_errors(diags: list[LensDiagnostic]) -> list[LensDiagnostic]:
    """Without the final "does not conform to the backend contract" check's error when
    another diagnostic says what broke it (it only repeats that something did)."""
    contract = [d for d in diags if d.kind == ErrorKind.LOWERING_ERROR
                and _CONTRACT.search(d.message)]
    if contract and len(contract) < len(diags):
        return [d for d in diags if not any(d is c for c in contract)]
    return diags


def list_torch_level(raw_module: Any, errors: list[Diag],
                     resolver: LocationResolver, target: str,
                     name_call: Callable[[str, str], str] | None = None) -> list[LensDiagnostic]:
    """Ops that fail before any backend: `torch.operator`s, else the ops at the error's
    location that torch-mlir's own pipeline fails on alone (a decomposition that makes a
    type the module contradicts), plus errors that name no op. `name_call(op, location)`
    names the Python call an op comes from ("`torch.special.i0` (an alias of `aten.i0`)")."""
    found = torch_operator_ops(raw_module, target)
    borrow_locations(raw_module, found, resolver)  # an op of a library block: its call's line
    at_errors = [] if found else find_at_errors(raw_module, "torch", errors)
    said = {(f.name, f.location): f.message for f in found if f.message}
    diags = unsupported_diagnostics(found + at_errors, target, resolver)
    reasons = {f.name: f.message for f in at_errors}
    location_of: dict[tuple[str, str | None, int | None], str] = {}
    for f in found + at_errors:
        location_of.setdefault((f.name, *_located(resolver, f.location)), f.location)
    for d in diags:
        short = d.op[len("torch."):] if d.op and d.op.startswith("torch.aten.") else d.op
        location = location_of.get((d.op or "", d.file, d.line))
        cause = name_call(short or "", location) if name_call and location else f"`{short}`"
        d.cause, d.ops = cause, [d.op or ""]
        why = "does not support it" if d.op not in reasons else \
            f"fails on it alone ({reasons[d.op or '']})"
        d.reason = reasons.get(d.op or "") or said.get((d.op or "", location or "")) or None
        if d.reason and d.op not in reasons:
            why += f" ({d.reason})"
        d.message = (f"{cause} cannot be lowered to {target_title(target)}: torch-mlir {why}"
                     + origins_text(d.related or []))
    known = {_IN_FUNCTION.sub("", f.message) for f in at_errors}
    others = [d for d in errors if not (found and _names_an_op(d))
              and _IN_FUNCTION.sub("", _first_line(d.message)) not in known]
    diags.extend(error_diagnostics(others, target, resolver))
    return diags

"""Partial lowering: the target IR for everything a backend accepts, rejected ops kept in place.

When a backend pipeline fails, plain torch-mlir shows nothing. Here each rejected op becomes a
call to a declared function named after it (`func.call @torch.aten.erfinv(%4)`), and the
backend pipeline runs on the result: every other op lowers as usual, and the backend's own
type conversion turns the call's `!torch.vtensor` operands and results into builtin tensors at
the boundary.

Why calls rather than leaving the Torch op in place: TOSA's conversion marks unsupported ops
illegal and fails as a whole on the first one (nothing would lower), while a call is an
ordinary op every backend pipeline carries through. The result is well-formed, parseable
target IR in which each rejected op sits exactly where it was, with its types converted.

    lower_partially(torch_module, target) → Partial (module, culprits, complete) or None

Rounds: a listing finds what the backend rejects (illegal_ops); ops that fail only once their
neighbours are outlined, or that a rejected op feeds, are settled by listing again. A leftover
that lowers alone (op_isolation) waits while others are outlined, and is outlined, marked as
such, only if it is still left over when nothing else is. Scalar
knock-on ops of a rejected tensor op (the size checks and asserts torch.export adds after a
data-dependent op) are folded into that op's call when nothing else uses them: TOSA has no
scalars at a function boundary, and the checks exist only for the rejected op's result.

The backend's final "contract" verification rejects any `func.call`; it is left out (or, when
the pipeline cannot be split, its failure on our calls alone is accepted), and the result is
checked instead for what verification is about here: no Torch op, no Torch type cast and no
unrealized cast left behind.

IR with calls in it is IR torch-mlir's tests never saw: the listing that calls this runs in a
forked child, and when that child dies it runs again with each round's pipeline in a child of
its own (crash_guard.guarded). Then an op that crashes a pass alone (crash_locate.py) is
outlined like a rejected op, its culprit message saying so, and the rounds go on; a crash no
op explains raises StepCrash.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func as func_d
from torch_mlir.passmanager import PassManager

from torch_mlir_lens.rules import targets
from torch_mlir_lens.worker.culprits import crash_locate, illegal_ops, line_context, op_isolation
from torch_mlir_lens.worker.culprits.illegal_ops import FoundOp, op_name
from torch_mlir_lens.worker.ir import crash_guard
from torch_mlir_lens.worker.ir.locations import LocationResolver
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag, captured, pipeline_errors

# Listings per partial lowering (a round lists what is still rejected and outlines it).
MAX_ROUNDS = 4
ISOLATION_ROUNDS = 3
BUDGET_S = 20.0  # no new round starts after this many seconds
_VERIFY_PASS = re.compile(r",?torch-verify-[\w-]+-backend-contract")
_LEFTOVER_PREFIXES = ("torch.", "torch_c.", "builtin.unrealized_conversion_cast")


@dataclass
class Culprit:
    """One op left unlowered, as data (no MLIR handle survives a pass run)."""

    id: int  # unique within one partial lowering, in discovery order
    name: str  # "torch.aten.erfinv"
    location: str  # location text of the op
    message: str  # the backend's reason when it gave one ("" otherwise)
    tensor: bool  # produces a tensor (scalar ops and asserts do not)
    feeders: list[int] = field(default_factory=list)  # ids of culprits whose results it uses
    folded: bool = False  # a scalar knock-on folded into its feeder's call (erased)
    symbol: str = ""  # the declared function it calls ("" when folded)
    lowers_alone: bool = False  # outlined only because its context kept it Torch


class StepCrash(Exception):
    """A pass crashed torch-mlir on the outlined module and no single op explains it."""

    def __init__(self, diag: Diag) -> None:
        super().__init__(diag.message)
        self.diag = diag

    def __reduce__(self) -> tuple[Any, ...]:
        return StepCrash, (self.diag,)


@dataclass
class Partial:
    """A module lowered to the target except for its culprits."""

    module: Any  # the lowered module operation
    culprits: list[Culprit]
    complete: bool  # False when the listing of rejected ops stopped early (time budget)
    outlined: Any = None  # the Torch-level module with the calls, before the backend pipeline
    pipeline: str = ""  # the pipeline that lowered `outlined` to `module`


def no_verify_pipeline(target: str, ctx: ir.Context) -> str:
    """The backend pipeline, expanded, without its final contract verification."""
    full = targets.BACKEND_PIPELINES[target]
    with ctx, captured(ctx):
        expanded = str(PassManager.parse(full, context=ctx))
        candidate = _VERIFY_PASS.sub("", expanded)
        try:  # some expanded pipelines name passes that are not registered on their own
            PassManager.parse(candidate, context=ctx)
        except (ValueError, ir.MLIRError):
            return full
    return candidate


def _leftovers(module_op: Any) -> list[str]:
    return [op_name(op) for op in illegal_ops.walk_ops(module_op)
            if op_name(op).startswith(_LEFTOVER_PREFIXES)]


def _is_tensor(value: Any) -> bool:
    return str(value.type).startswith("!torch.vtensor")


def _owner(value: Any) -> Any | None:
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner


def _call_operands(op: Any) -> list[Any]:
    """The values a call passes: every non-constant operand, lists of values unpacked."""
    out: list[Any] = []
    for v in op.operands:
        owner = _owner(v)
        if owner is not None and illegal_ops.is_constant_op(owner):
            continue  # constants stay behind: the declared function stands for the op as used
        if owner is not None and op_name(owner) == "torch.prim.ListConstruct":
            out.extend(e for e in owner.operation.operands
                       if _owner(e) is None or not illegal_ops.is_constant_op(_owner(e)))
            continue
        out.append(v)
    return out


def _feeders(op: Any, ids: dict[int, int], calls: dict[str, int], walk_pos: dict[Any, int],
             depth: int = 4) -> list[int]:
    """Culprit ids whose results reach `op` through at most `depth` ops (nearest first)."""
    out: list[int] = []
    todo = [(v, 0) for v in op.operands]
    seen = 0
    while todo and seen < 64:
        value, level = todo.pop(0)
        seen += 1
        owner = _owner(value)
        if owner is None:
            continue
        operation = owner.operation
        if op_name(operation) == "func.call":
            callee = str(operation.attributes["callee"]).lstrip("@")
            if callee in calls and calls[callee] not in out:
                out.append(calls[callee])
            continue
        pos = walk_pos.get(operation)
        if pos is not None and pos in ids:
            if ids[pos] not in out:
                out.append(ids[pos])
            continue
        if level < depth:
            todo.extend((v, level + 1) for v in operation.operands)
    return out


class _Outliner:
    """Replaces ops of one module by calls to declared functions named after them."""

    def __init__(self, module_op: Any) -> None:
        self.module_op = module_op
        self.body = module_op.regions[0].blocks[0]
        self.symbols: dict[str, str] = {}  # op name + signature → symbol
        self.taken = {str(op.attributes["sym_name"]).strip('"')
                      for op in self.body.operations if "sym_name" in op.attributes}
        self.callee_ids: dict[str, int] = {}  # symbol → culprit id of its (first) call

    def _symbol(self, name: str, key: str, ftype: ir.FunctionType) -> str:
        """One declared function per distinct op: same name, types, attributes and constant
        operands (two slices with other bounds get two functions)."""
        if key not in self.symbols:
            symbol, n = name, 1
            while symbol in self.taken:
                symbol, n = f"{name}_{n}", n + 1
            self.taken.add(symbol)
            with ir.InsertionPoint.at_block_begin(self.body), ir.Location.unknown():
                func_d.FuncOp(symbol, ftype, visibility="private")
            self.symbols[key] = symbol
        return self.symbols[key]

    def outline(self, op: Any, culprit: Culprit) -> None:
        operation = op.operation
        args = _call_operands(operation)
        results = [r.type for r in operation.results]
        ftype = ir.FunctionType.get([a.type for a in args], results)
        symbol = self._symbol(culprit.name, op_isolation.isolation_key(op), ftype)
        with ir.InsertionPoint(operation), operation.location:
            call = func_d.CallOp(results, ir.FlatSymbolRefAttr.get(symbol), args)
        for old, new in zip(operation.results, call.results, strict=True):
            old.replace_all_uses_with(new)
        had_body = len(operation.regions) > 0
        operation.erase()
        culprit.symbol = symbol
        self.callee_ids.setdefault(symbol, culprit.id)
        if had_body:  # a loop outlined whole takes the calls made of its body's ops along
            self._drop_uncalled()

    def _drop_uncalled(self) -> None:
        """Erase the declarations no call uses any more."""
        called = {str(op.attributes["callee"]).lstrip("@")
                  for op in illegal_ops.walk_ops(self.module_op) if op_name(op) == "func.call"}
        for key, symbol in list(self.symbols.items()):
            if symbol in called:
                continue
            for op in list(self.body.operations):
                if "sym_name" in op.attributes and \
                        str(op.attributes["sym_name"]).strip('"') == symbol:
                    op.operation.erase()
            del self.symbols[key]


def _outline_round(work: Any, found: list[FoundOp], culprits: list[Culprit],
                   outliner: _Outliner) -> bool:
    """Outline the ops of `found` (indices into a walk of `work`) in place; False if one of
    them cannot be outlined (its operand or result types have no backend equivalent)."""
    ops = illegal_ops.walk_ops(work)
    walk_pos = {op.operation: i for i, op in enumerate(ops)}
    ids: dict[int, int] = {}
    fresh: list[tuple[Any, Culprit]] = []
    for f in found:
        index = f.index if 0 <= f.index < len(ops) else _find(ops, f, ids)
        if index is None:
            return False
        if index in ids:
            continue
        op = ops[index]
        culprit = Culprit(len(culprits), f.name, f.location, f.message,
                          any(_is_tensor(r) for r in op.operation.results),
                          lowers_alone=f.lowers_alone)
        ids[index] = culprit.id
        culprits.append(culprit)
        fresh.append((op, culprit))
    by_id = {c.id: c for c in culprits}
    for op, culprit in fresh:
        culprit.feeders = [i for i in _feeders(op.operation, ids, outliner.callee_ids, walk_pos)
                           if i != culprit.id]
    tensor_roots = {c.id for c in culprits if c.tensor}

    def knock_on(c: Culprit) -> bool:
        todo, seen = list(c.feeders), set()
        while todo:
            i = todo.pop()
            if i in tensor_roots:
                return True
            if i not in seen:
                seen.add(i)
                todo.extend(by_id[i].feeders)
        return False

    with work.context:
        # Scalar knock-ons first, last use first: each must be dead once its users are gone.
        for op, culprit in reversed(fresh):
            if not culprit.tensor and knock_on(culprit) and all(
                    not list(r.uses) for r in op.operation.results):
                op.operation.erase()
                culprit.folded = True
        for op, culprit in fresh:
            if not culprit.folded:
                outliner.outline(op, culprit)
        _erase_dead_lists(work)
    return True


def _find(ops: list[Any], f: FoundOp, taken: dict[int, int]) -> int | None:
    """The index of the op `f` names, by name and location (an op a pass re-created carries
    no index tag)."""
    for i, op in enumerate(ops):
        if i not in taken and illegal_ops.display_name(op) == f.name and (
                illegal_ops.same_op_location(str(op.location), f.location)):
            return i
    return None


def _alike(work: Any, crashers: list[FoundOp]) -> list[FoundOp]:
    """Every op of `work` that is the same op as one of `crashers` (name, types, attributes,
    constant operands: op_isolation's key): each crashes the pass alone as the one found did,
    so all of them are outlined at once, or the next listing dies on the next one."""
    ops = illegal_ops.walk_ops(work)
    keys = set()
    for crasher in crashers:
        index = _find(ops, crasher, {})
        if index is not None:
            keys.add(op_isolation.isolation_key(ops[index]))
    message = {c.name: c.message for c in crashers}
    alike = [FoundOp(illegal_ops.display_name(op), str(op.location),
                     message.get(illegal_ops.display_name(op), crashers[0].message), i)
             for i, op in enumerate(ops)
             if illegal_ops.is_candidate(op_name(op)) and op_isolation.isolation_key(op) in keys]
    return alike or crashers


def _erase_dead_lists(module_op: Any) -> None:
    for op in reversed(illegal_ops.walk_ops(module_op)):
        if op_name(op) == "torch.prim.ListConstruct" and not list(op.operation.results[0].uses):
            op.operation.erase()


def _settle_dependents(work: Any, found: list[FoundOp], target: str,
                       doubted: set[tuple[str, str]]) -> list[FoundOp]:
    """Drop the leftovers that are left over only because a rejected op feeds them.

    A conversion also leaves an op in place when an operand comes from an op that stayed
    Torch (the `aten.cat` of slices of an `fft` result). Each leftover fed by another one is
    tried with the rest of its line (line_context.py); if that lowers, it is not outlined this
    round. Should the backend still reject it once its feeder is a call, the next round lists
    it again, and then it stays (`doubted` remembers it).
    """
    ops = illegal_ops.walk_ops(work)
    walk_pos = {op.operation: i for i, op in enumerate(ops)}
    indices = {f.index: f.index for f in found if 0 <= f.index < len(ops)}
    dependent = [f for f in found if f.index in indices and (f.name, f.location) not in doubted
                 and any(i != f.index for i in
                         _feeders(ops[f.index].operation, indices, {}, walk_pos))]
    if not dependent:
        return found
    fine = line_context.lowers_with_its_line(ops, [f.index for f in dependent], set(indices),
                                             target)
    drop = {f.index for f, ok in zip(dependent, fine, strict=True) if ok}
    doubted.update((f.name, f.location) for f in dependent if f.index in drop)
    return [f for f in found if f.index not in drop]


def _only_contract_errors(messages: list[str]) -> bool:
    """Whether a failed run failed only in the final contract check, on our calls."""
    return bool(messages) and all(
        "backend contract" in m or "failed to legalize operation 'func.call'" in m
        for m in messages)


def _try_lower(work: Any, pipeline: str, step: str) -> Any | None:
    """A lowered clone of `work`, or None if the pipeline fails or leaves Torch ops.

    When the pipeline still ends in the contract verification (StableHLO: its expanded form
    names passes that cannot be parsed alone), a failure of that check alone is accepted: the
    verification changes nothing, so the module is the converted one. A crash raises
    crash_guard.Crash's located form: StepCrash, or `_Crashed` naming the op.
    """
    lowered = work.clone()
    messages = _run_guarded(lowered, pipeline, step)
    if messages and not _only_contract_errors(messages):
        return None
    return None if _leftovers(lowered) else lowered


class _Crashed(Exception):
    """A pass crashed on one op (`found`), to be outlined."""

    def __init__(self, found: FoundOp) -> None:
        super().__init__(found.message)
        self.found = found


def _run_guarded(module_op: Any, pipeline: str, step: str) -> list[str]:
    """Run `pipeline` on `module_op` in place, in a forked child when guarding: its error
    messages ([] when it passes). A crash raises _Crashed (an op crashes alone) or StepCrash."""
    def run() -> list[str]:
        try:
            errors = pipeline_errors(module_op, pipeline)
        except crash_guard.THROWN as exc:  # a C++ exception from a pass: a crash
            raise crash_guard.Crash.thrown(step, exc) from exc
        return [d.message for d in errors or []]

    if not crash_guard.guarding_passes():
        return run()  # a crash ends the listing's child, which runs again guarded
    try:
        return crash_guard.run_in_place(module_op, run, step=step, pipeline=pipeline)
    except crash_guard.Crash as crash:
        diag = crash_locate.crash_diag(module_op, pipeline, crash)
        found = crash_locate.crashed_op(diag)
        if found is None:
            raise StepCrash(diag) from crash
        raise _Crashed(found) from crash


def _listed(work: Any, target: str,
            resolver: LocationResolver | None) -> tuple[list[FoundOp], bool]:
    """illegal_ops.find_unsupported, in a forked child when guarding: its pipelines (the
    conversions without the final check, each op alone) crash on what the backend's would.
    A crash raises _Crashed (an op crashes alone) or StepCrash."""
    if not crash_guard.guarding_passes():
        return illegal_ops.find_unsupported(work, target, resolver)
    step = f"the listing of what {targets.target_title(target)} rejects"
    try:
        return crash_guard.run_forked(
            lambda: illegal_ops.find_unsupported(work, target, resolver), step=step)
    except crash_guard.Crash as crash:
        diag = crash_locate.crash_diag(work, targets.BACKEND_PIPELINES[target], crash)
        found = crash_locate.crashed_op(diag)
        if found is None:
            raise StepCrash(diag) from crash
        raise _Crashed(found) from crash


def outline_torch_operators(raw_module: Any, torch_pipeline: str) -> tuple[Any, set[str]] | None:
    """For a program torch-mlir itself rejects (`torch.operator`: aten ops it does not know):
    a clone of the raw module with those ops outlined, run to the Torch backend contract.
    (module, declared symbols), or None if that pipeline still fails."""
    work = raw_module.clone()
    found = [FoundOp(illegal_ops.display_name(op), str(op.location), "", i)
             for i, op in enumerate(illegal_ops.walk_ops(work)) if op_name(op) == "torch.operator"]
    outliner = _Outliner(work)
    if not found or not _outline_round(work, found, [], outliner):
        return None
    try:
        if _run_guarded(work, torch_pipeline, "the Torch pipeline (ops outlined)"):
            return None
    except _Crashed as crashed:
        raise StepCrash(Diag("error", crashed.found.message, crashed.found.location)) from None
    return work, set(outliner.callee_ids)


def outline_ops(module_op: Any, found: list[FoundOp]) -> set[str] | None:
    """The ops of `found` (indices into a walk of `module_op`) outlined in place, each a call
    to a declared function named after it: their symbols, or None if one cannot be outlined
    (an ONNX model's nodes torch-mlir's conversion rejects, before that conversion runs)."""
    culprits: list[Culprit] = []
    outliner = _Outliner(module_op)
    if not _outline_round(module_op, found, culprits, outliner):
        return None
    return {c.symbol for c in culprits if c.symbol}


def lower_partially(torch_module: Any, target: str, budget_s: float = BUDGET_S, *,
                    outlined_already: bool = False,
                    resolver: LocationResolver | None = None,
                    crashing: list[FoundOp] | None = None) -> Partial | None:
    """`torch_module` (left untouched) lowered to `target` with every rejected op outlined.

    None when there is nothing to outline, an op cannot be outlined, or the pipeline still
    fails after the last round or `budget_s` seconds: the caller then shows the Torch IR and
    lists the rejected ops as before. Leftovers that lower alone wait while ops that fail
    alone are outlined (outlining those usually lets them lower); if they still stay, they
    are outlined too, marked `lowers_alone`. With a `resolver`, culprits without a user line
    borrow their nearest neighbour's. `crashing`: ops known to crash the backend (outlined
    before any listing, which would crash on them too). Raises StepCrash on a crash no op
    explains.
    """
    if target not in targets.BACKEND_PIPELINES:
        return None
    work = torch_module.clone()
    pipeline = no_verify_pipeline(target, work.context)
    outliner = _Outliner(work)
    culprits: list[Culprit] = []
    complete = True
    doubted: set[tuple[str, str]] = set()
    rounds = MAX_ROUNDS if target in targets.LEFTOVER_PIPELINES else ISOLATION_ROUNDS
    step = f"the {targets.target_title(target)} pipeline on the outlined module"
    start = time.perf_counter()
    if crashing and not _outline_round(work, _alike(work, crashing), culprits, outliner):
        return None
    if outlined_already or crashing:  # calls made already: perhaps nothing else is rejected
        try:
            lowered = _try_lower(work, pipeline, step)
        except _Crashed as crashed:
            lowered = None
            if not _outline_round(work, _alike(work, [crashed.found]), culprits, outliner):
                return None
        if lowered is not None:
            return Partial(lowered, culprits, True, work, pipeline)
    while rounds > 0:  # a crash pinned on an op costs no round: the op is outlined
        if time.perf_counter() - start > budget_s:
            return None  # a big module with long chains of rejected ops: list them only
        try:
            found, done = _listed(work, target, resolver)
        except _Crashed as crashed:  # the listing itself crashed on an op: outline it, again
            if not _outline_round(work, _alike(work, [crashed.found]), culprits, outliner):
                return None
            continue
        rounds -= 1
        complete = complete and done
        if target in targets.LEFTOVER_PIPELINES:
            found = _settle_dependents(work, found, target, doubted)
        failing_alone = [f for f in found if not f.lowers_alone]
        found = failing_alone or found
        if not found and not culprits:
            return None
        if found and not _outline_round(work, found, culprits, outliner):
            return None
        try:  # (nothing found: the ops that crashed are outlined, the rest may lower now)
            lowered = _try_lower(work, pipeline, step)
        except _Crashed as crashed:  # outlined too; the next round lists what is left
            if not _outline_round(work, _alike(work, [crashed.found]), culprits, outliner):
                return None
            continue
        if lowered is not None:
            return Partial(lowered, culprits, complete, work, pipeline)
    return None


def header(diags: list[Any], target: str, files: Any = None) -> list[str]:
    """The comment lines above a partial IR: which ops were left unlowered, and where."""
    from torch_mlir_lens.rules.culprits import cause_of, culprit_diagnostics, located
    from torch_mlir_lens.rules.targets import target_title

    title = target_title(target)
    culprits = culprit_diagnostics(diags)
    lines = [f"// Partial {title} lowering: {len(culprits)} "
             f"{'line holds' if len(culprits) == 1 else 'lines hold'} ops {title} cannot lower,",
             "// each kept in place as a call to a declared function named after the op, its",
             f"// operands and results converted to {title} types. Everything else is lowered."]
    files = files or next((d.file for d in culprits if d.file), None)
    for d in culprits:
        lines.append(f"//   {located(d, files)}: {cause_of(d)}")
    return lines


def decorate(rendered: Any, diags: list[Any], target: str, symbols: set[str],
             module_file: str | None = None) -> Any:
    """`rendered` (ir_text.RenderedIr) with the header on top and each call of an outlined op
    marked; the source map shifted to match."""
    from torch_mlir_lens.protocol.results import IrLineMapping
    from torch_mlir_lens.rules.targets import target_title

    top = header(diags, target, module_file)
    calls = re.compile(r"\bcall @(" + "|".join(re.escape(s) for s in sorted(symbols)) +
                       r")\(") if symbols else None
    mark = f"  // not lowered to {target_title(target)}"
    body = []
    for line in rendered.text.splitlines():
        body.append(line + mark if calls is not None and calls.search(line) else line)
    rendered.text = "\n".join([*top, *body]) + "\n"
    rendered.map = [IrLineMapping(m.ir_line + len(top), m.file, m.line, m.depth)
                    for m in rendered.map]
    return rendered


__all__ = ["MAX_ROUNDS", "Culprit", "Partial", "StepCrash", "decorate", "header",
           "lower_partially", "outline_ops", "outline_torch_operators"]

"""Rejected ops → one diagnostic per cause and line, named after the Python call.

A backend's raw verdict is a list of ops: the masked_select line alone gives six (the op, then
the size check, comparisons and assert torch.export adds after a data-dependent op), and
`torch.roll` shows up as the two `aten.slice.Tensor` torch-mlir decomposed it into.
Here:

- knock-on ops (no tensor result, fed by a rejected tensor op; or, when the data flow is not
  known, sharing its line) are folded into the diagnostic of the op that caused them;
- the remaining ops of one line make one diagnostic, its primary op first;
- an op that is not what its Python call produced is named after that call, found through
  the FX node the op comes from (fx_origins.py): "decomposed" only when a decomposition made
  it, "an alias of" or "as" (another overload) when the op is the call's under another name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, Severity
from torch_mlir_lens.rules.culprits import short_op
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.worker.culprits import fx_origins
from torch_mlir_lens.worker.ir.locations import LocationResolver

_LEGALIZE = re.compile(r"failed to legalize operation")
_SCALAR_OPS = re.compile(r"^torch\.(runtime\.|prim\.|aten\.(Int|Bool|Float|size|sym_)|"
                         r"aten\.\w+\.(int|float|bool)$)")

Line = tuple[str, int]
MAX_NAMED = 4  # ops named in a decomposition's message; the diagnostic's `ops` has them all
# Calls named in one line's message (a library model with dynamic sizes on TOSA gives 15);
# `ops` and the related library lines have them all.
MAX_CAUSES = 3


@dataclass
class Rejected:
    """One rejected op, as the grouping needs it."""

    id: int
    name: str  # "torch.aten.slice.Tensor"
    location: str
    message: str = ""
    tensor: bool = True  # produces a tensor
    feeders: list[int] | None = None  # ids of rejected ops feeding it; None: not known
    lowers_alone: bool = False  # left unlowered in the module, yet it lowers alone


@dataclass
class _Group:
    line: Line | None
    primaries: list[Rejected] = field(default_factory=list)
    knock_on: list[Rejected] = field(default_factory=list)


def _is_knock_on(r: Rejected, by_id: dict[int, Rejected], tensor_lines: set[Line | None],
                 line: Line | None) -> bool:
    if r.lowers_alone:  # never a culprit of its own
        return True
    if r.tensor:
        return False
    if r.feeders is None:  # data flow not known: a scalar op or assert beside a rejected
        return line in tensor_lines  # tensor op is taken for its check
    todo, seen = list(r.feeders or []), set()
    while todo:
        i = todo.pop()
        if i in seen or i not in by_id:
            continue
        seen.add(i)
        if by_id[i].tensor and not by_id[i].lowers_alone:
            return True
        todo.extend(by_id[i].feeders or [])
    return False


def _root(r: Rejected, by_id: dict[int, Rejected]) -> Rejected | None:
    """The rejected op a knock-on depends on (nearest first): a tensor op, or for an op that
    lowers alone any op that does not."""
    todo, seen = list(r.feeders or []), set()
    while todo:
        i = todo.pop(0)
        if i in seen or i not in by_id:
            continue
        seen.add(i)
        feeder = by_id[i]
        if not feeder.lowers_alone and (feeder.tensor or r.lowers_alone):
            return feeder
        todo.extend(by_id[i].feeders or [])
    return None


def cause_text(origin: fx_origins.Origin, ops: list[str]) -> str:
    """"`F.interpolate` (decomposed to `aten.__interpolate...`)": the call, then how `ops`
    (short names) came from it."""
    if origin.how == fx_origins.SAME or ops == [origin.call]:
        return f"`{origin.call}`"
    listed = ", ".join(f"`{o}`" for o in ops[:MAX_NAMED])
    if len(ops) > MAX_NAMED:
        listed += f" and {len(ops) - MAX_NAMED} more"
    if origin.how == fx_origins.ALIAS:
        return f"`{origin.call}` (an alias of {listed})"
    if origin.how == fx_origins.OVERLOAD:
        return f"`{origin.call}` (as {listed})"
    if origin.how == fx_origins.IMPORTED:
        return f"`{origin.call}` (imported as {listed})"
    return f"`{origin.call}` (decomposed to {listed})"


def _named_causes(texts: list[str]) -> str:
    """The causes of one line as its message names them: the first few, then how many more."""
    if len(texts) <= MAX_CAUSES + 1:  # "and 1 more call" would be no shorter
        return ", ".join(texts)
    return f"{', '.join(texts[:MAX_CAUSES])} and {len(texts) - MAX_CAUSES} more calls"


def _causes(group: _Group, calls: fx_origins.FxCalls, resolver: LocationResolver,
            ir_ops: dict[fx_origins.Chain, set[str]],
            rewrites: fx_origins.TorchRewrites | None) -> list[tuple[str, list[str]]]:
    """[(cause text, [short op names])] for the primaries of one line, in program order: each
    op named after the FX node it comes from (found by its whole call chain)."""
    causes: dict[tuple[str, str], list[str]] = {}
    for r in group.primaries:
        op = short_op(r.name)
        chain = fx_origins.first_chain(resolver, r.location)
        origin = calls.origin(op, chain, ir_ops.get(chain, set()), rewrites)
        names = causes.setdefault((origin.call, origin.how), [])
        if op not in names:
            names.append(op)
    return [(cause_text(fx_origins.Origin(call, how), ops), ops)
            for (call, how), ops in causes.items()]


def diagnostics(rejected: Iterable[Rejected], target: str, resolver: LocationResolver,
                calls: fx_origins.FxCalls, ir_ops: dict[fx_origins.Chain, set[str]],
                rewrites: fx_origins.TorchRewrites | None = None) -> list[LensDiagnostic]:
    """One unsupported-op diagnostic per line (and one per rejected op without a line).
    `rewrites` (when the raw IR is at hand) checks which call torch-mlir rewrote."""
    items = list(rejected)
    by_id = {r.id: r for r in items}
    line_of: dict[int, Line | None] = {}
    for r in items:
        frames = resolver.user_frames(r.location)
        line_of[r.id] = frames[0] if frames else None
    tensor_lines = {line_of[r.id] for r in items if r.tensor and not r.lowers_alone}
    groups: dict[Any, _Group] = {}
    knock_ons: list[Rejected] = []
    for r in items:
        if _is_knock_on(r, by_id, tensor_lines, line_of[r.id]):
            knock_ons.append(r)
            continue
        key: Any = line_of[r.id] if line_of[r.id] is not None else ("op", r.id)
        groups.setdefault(key, _Group(line_of[r.id])).primaries.append(r)
    for r in knock_ons:
        root = _root(r, by_id)
        owner = root if root is not None else r
        key = line_of[owner.id] if line_of[owner.id] is not None else ("op", owner.id)
        group = groups.get(key)
        if group is None:
            groups.setdefault(("op", r.id), _Group(line_of[r.id])).primaries.append(r)
        else:
            group.knock_on.append(r)
    title = target_title(target)
    out = []
    ordered = sorted(groups.values(), key=lambda g: (g.line is None, g.line or ("", 0)))
    for group in ordered:
        line = group.line
        if all(r.lowers_alone for r in group.primaries):
            out.extend(_in_context(group, target, resolver, line_of))
            continue
        cause = _named_causes([text for text, _ops in _causes(group, calls, resolver, ir_ops,
                                                              rewrites)])
        first = group.primaries[0]
        detail = first.message if first.message and not _LEGALIZE.search(first.message) else ""
        message = f"{cause} cannot be lowered to {title}" + (f" ({detail})" if detail else "")
        ops = list(dict.fromkeys(r.name for r in group.primaries))
        knock = [_knock_on_entry(r.name, line_of[r.id]) for r in group.knock_on]
        out.append(LensDiagnostic(
            severity=Severity.ERROR, message=message, kind=ErrorKind.UNSUPPORTED_OP,
            file=line[0] if line else None, line=line[1] if line else None, op=first.name,
            target=target, cause=cause, ops=ops, knock_on=knock or None,
            reason=detail or None,
        ))
    return out


def _in_context(group: _Group, target: str, resolver: LocationResolver,
                line_of: dict[int, Line | None]) -> list[LensDiagnostic]:
    """Ops outlined although each lowers alone, with no culprit feeding them or on their line:
    what failed is their context, said as such (not an unsupported op)."""
    from torch_mlir_lens.worker.culprits.illegal_ops import FoundOp, context_diagnostics

    found = [FoundOp(r.name, r.location, r.message) for r in group.primaries]
    return context_diagnostics(found, target, resolver)


def _knock_on_entry(name: str, line: Line | None) -> dict[str, Any]:
    return {"op": name, "file": line[0] if line else None, "line": line[1] if line else None}


def guess_tensor(name: str) -> bool:
    """Whether an op (known only by name) produces a tensor: not a scalar op or an assert."""
    return not _SCALAR_OPS.match(name)


__all__ = ["Rejected", "cause_text", "diagnostics", "guess_tensor"]

"""Rejected ops → one diagnostic per cause and line, named after the Python call.

A backend's raw verdict is a list of ops: the masked_select line alone gives six (the op, then
the size check, comparisons and assert torch.export adds after a data-dependent op), and
`torch.roll` shows up as the `aten.slice.Tensor` and `aten.cat` torch-mlir decomposed it into.
Here:

- knock-on ops (no tensor result, fed by a rejected tensor op; or, when the data flow is not
  known, sharing its line) are folded into the diagnostic of the op that caused them;
- the remaining ops of one line make one diagnostic, its primary op first;
- an op that is not what the line's Python call produced is named after that call: the FX
  node at the line whose op vanished from the Torch IR (decomposed by torch-mlir), or the
  root of the node's `from_node` chain (decomposed by torch.export).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, Severity
from torch_mlir_lens.rules.culprits import short_op
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.worker.locations import LocationResolver, UserFiles

_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")
_LEGALIZE = re.compile(r"failed to legalize operation")
_SCALAR_OPS = re.compile(r"^torch\.(runtime\.|prim\.|aten\.(Int|Bool|Float|size|sym_)|"
                         r"aten\.\w+\.(int|float|bool)$)")

Line = tuple[str, int]
MAX_NAMED = 4  # ops named in a decomposition's message; the diagnostic's `ops` has them all


@dataclass
class Rejected:
    """One rejected op, as the grouping needs it."""

    id: int
    name: str  # "torch.aten.slice.Tensor"
    location: str
    message: str = ""
    tensor: bool = True  # produces a tensor
    feeders: list[int] | None = None  # ids of rejected ops feeding it; None: not known


@dataclass
class FxCall:
    """An FX node of the exported program, with the Python call that produced it."""

    op: str  # "aten.roll"
    origin: str  # the op the Python call produced before any decomposition ("aten.linear")
    call: str  # "torch.roll", "F.interpolate", "Tensor.scatter_add", or the origin op


@dataclass
class _Group:
    line: Line | None
    primaries: list[Rejected] = field(default_factory=list)
    knock_on: list[Rejected] = field(default_factory=list)


def _overload_free(target: str) -> str:
    return target[: -len(".default")] if target.endswith(".default") else target


def _root_source(node: Any) -> str | None:
    sources = node.meta.get("from_node") or []
    source = sources[-1] if sources else None
    while source is not None and getattr(source, "from_node", None):
        source = source.from_node[-1]
    target = getattr(source, "target", None)
    return _overload_free(str(target)) if target else None


def _call_text(node: Any, op: str) -> str:
    """How the user wrote the call: `torch.fft.fft`, `F.interpolate`, `Tensor.scatter_add`."""
    torch_fn = node.meta.get("torch_fn")
    kind, _, name = (torch_fn[1] if torch_fn else "").rpartition(".")
    if name.startswith("__"):  # a property such as `.real` (`__get__`): name the aten op
        return f"Tensor.{op.rsplit('.', 1)[-1]}"
    if not name:
        return op
    if kind.startswith("method"):
        return f"Tensor.{name}"
    code = (node.meta.get("stack_trace") or "").strip().splitlines()
    text = code[-1] if code else ""
    for m in _CALL.finditer(text):
        dotted = m.group(1)
        if dotted.split(".")[-1] == name or dotted.replace(".", "_").endswith(name):
            return dotted
    return f"torch.{name}"


def fx_calls(program: Any, users: UserFiles) -> dict[Line, list[FxCall]]:
    """The aten calls of the exported program at each user line (innermost user frame)."""
    out: dict[Line, list[FxCall]] = {}
    for node in program.graph.nodes:
        target = str(node.target)
        if node.op != "call_function" or not target.startswith("aten."):
            continue
        frames = [(f, int(n)) for f, n in _FILE_LINE.findall(node.meta.get("stack_trace") or "")
                  if f in users]
        if not frames:
            continue
        op = _overload_free(target)
        origin = _root_source(node) or op
        out.setdefault(frames[-1], []).append(FxCall(op, origin, _call_text(node, origin)))
    return out


def ir_ops_by_line(module_op: Any, resolver: LocationResolver) -> dict[Line, set[str]]:
    """The short names of the ops of a module at each user line (innermost user frame)."""
    out: dict[Line, set[str]] = {}

    def visit(op: Any) -> Any:
        frames = resolver.user_frames(str(op.location))
        if frames:
            out.setdefault(frames[0], set()).add(short_op(str(op.operation.name)))
        from torch_mlir import ir

        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    return out


def _is_knock_on(r: Rejected, by_id: dict[int, Rejected], tensor_lines: set[Line | None],
                 line: Line | None) -> bool:
    if r.tensor:
        return False
    if line in tensor_lines:  # a scalar op or assert beside a rejected tensor op
        return True
    todo, seen = list(r.feeders or []), set()
    while todo:
        i = todo.pop()
        if i in seen or i not in by_id:
            continue
        seen.add(i)
        if by_id[i].tensor:
            return True
        todo.extend(by_id[i].feeders or [])
    return False


def _root(r: Rejected, by_id: dict[int, Rejected]) -> Rejected | None:
    """The rejected tensor op a knock-on op depends on (nearest first)."""
    todo, seen = list(r.feeders or []), set()
    while todo:
        i = todo.pop(0)
        if i in seen or i not in by_id:
            continue
        seen.add(i)
        if by_id[i].tensor:
            return by_id[i]
        todo.extend(by_id[i].feeders or [])
    return None


def _causes(group: _Group, calls: Sequence[FxCall],
            ir_ops: set[str]) -> list[tuple[str, list[str]]]:
    """[(cause text, [short op names])] for the primaries of one line, in program order."""
    vanished = [c for c in calls if c.op not in ir_ops]
    causes: dict[str, list[str]] = {}
    for r in group.primaries:
        op = short_op(r.name)
        match = next((c for c in calls if c.op == op), None)
        if match is not None and match.origin != op:
            key = match.call  # decomposed by torch.export (e.g. `.real` → view_as_real)
        elif match is None and vanished:
            key = vanished[0].call  # decomposed by torch-mlir (e.g. roll → slice + cat)
        else:
            key = ""
        names = causes.setdefault(key or op, [])
        if op not in names:
            names.append(op)
    out = []
    for key, ops in causes.items():
        if ops == [key]:
            out.append((f"`{key}`", ops))
        else:
            listed = ", ".join(f"`{o}`" for o in ops[:MAX_NAMED])
            if len(ops) > MAX_NAMED:
                listed += f" and {len(ops) - MAX_NAMED} more"
            out.append((f"`{key}` (decomposed to {listed})", ops))
    return out


def diagnostics(rejected: Iterable[Rejected], target: str, resolver: LocationResolver,
                calls: dict[Line, list[FxCall]],
                ir_ops: dict[Line, set[str]]) -> list[LensDiagnostic]:
    """One unsupported-op diagnostic per line (and one per rejected op without a line)."""
    items = list(rejected)
    by_id = {r.id: r for r in items}
    line_of: dict[int, Line | None] = {}
    for r in items:
        frames = resolver.user_frames(r.location)
        line_of[r.id] = frames[0] if frames else None
    tensor_lines = {line_of[r.id] for r in items if r.tensor}
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
        causes = _causes(group, calls.get(line, []) if line else [],
                         ir_ops.get(line, set()) if line else set())
        cause = ", ".join(text for text, _ops in causes)
        first = group.primaries[0]
        detail = first.message if first.message and not _LEGALIZE.search(first.message) else ""
        message = f"{cause} cannot be lowered to {title}" + (f" ({detail})" if detail else "")
        ops = list(dict.fromkeys(r.name for r in group.primaries))
        knock = [_knock_on_entry(r.name, line_of[r.id]) for r in group.knock_on]
        out.append(LensDiagnostic(
            severity=Severity.ERROR, message=message, kind=ErrorKind.UNSUPPORTED_OP,
            file=line[0] if line else None, line=line[1] if line else None, op=first.name,
            target=target, cause=cause, ops=ops, knock_on=knock or None,
        ))
    return out


def _knock_on_entry(name: str, line: Line | None) -> dict[str, Any]:
    return {"op": name, "file": line[0] if line else None, "line": line[1] if line else None}


def guess_tensor(name: str) -> bool:
    """Whether an op (known only by name) produces a tensor: not a scalar op or an assert."""
    return not _SCALAR_OPS.match(name)


__all__ = ["FxCall", "Rejected", "diagnostics", "fx_calls", "guess_tensor", "ir_ops_by_line"]

"""Which nodes of a module's graph a backend rejects, from the same diagnostics `check` reads.

A lowering's diagnostics name each rejected op at its Python line (`rules/culprits.py`); a
graph node is one op at its line. A diagnostic is pinned on the nodes at its line whose op it
names (`torch.aten.fmod.Scalar` ↔ `aten.fmod.Scalar`), else whose op its cause names
(`torch.roll` ↔ `aten.roll`), else on every op at that line. Its knock-on ops fail only because
of it; an error without a line leaves the nodes unknown and the module failed. A node rejected
by the plain lowering and lowered by the lowering through the module's rewrites was rewritten.

Torch-free: the worker builds graphs with it, and the server could from any lowering.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence

from torch_mlir_lens.protocol.graph import GraphNode, ModuleGraph, NodeVerdict
from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LowerResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.verdict import backend_verdict

_NOT_OPS = ("input", "output")
_CAUSE_NAME = re.compile(r"`([\w.]+)`")


def op_names(op: str) -> set[str]:
    """The names an op may go by: `torch.aten.fmod.Scalar` → {aten.fmod.Scalar, aten.fmod}."""
    name = op.removeprefix("torch.")
    names = {name}
    if name.count(".") >= 2:
        names.add(name.rsplit(".", 1)[0])
    return names


def _base(op: str) -> str:
    """The op's own name without namespace and overload: `aten.roll.default` → `roll`."""
    parts = op.removeprefix("torch.").split(".")
    return parts[1] if len(parts) >= 2 else parts[0]


def _same_file(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and os.path.normpath(a) == os.path.normpath(b)


def _why(diag: LensDiagnostic) -> str:
    return diag.reason or diag.message.splitlines()[0]


def nodes_named_by(nodes: Sequence[GraphNode], file: str | None, line: int | None,
                   ops: Iterable[str], cause: str | None = None) -> list[GraphNode]:
    """The nodes a finding at `file:line` about `ops` (its `cause`) is about."""
    if line is None:
        return []
    at = [n for n in nodes if n.line == line and n.op not in _NOT_OPS
          and (file is None or _same_file(n.file, file))]
    wanted = set().union(*(op_names(o) for o in ops if o))
    hit = [n for n in at if op_names(n.op) & wanted]
    if not hit and cause:
        words = {_base(w) for w in _CAUSE_NAME.findall(cause)}
        hit = [n for n in at if _base(n.op) in words]
    return hit or at


def _verdicts_of(nodes: Sequence[GraphNode], result: LowerResult,
                 ) -> tuple[dict[str, NodeVerdict], NodeVerdict]:
    """Each node's verdict (by id) and the module's, from one lowering."""
    verdict = backend_verdict(result)
    found: dict[str, NodeVerdict] = {}
    for diag in verdict.culprits:
        ops = diag.ops or ([diag.op] if diag.op else [])
        for node in nodes_named_by(nodes, diag.file, diag.line, ops, culprits.cause_of(diag)):
            found[node.id] = NodeVerdict(ok=False, status="rejected", why=_why(diag))
    for diag in verdict.culprits:
        for k in diag.knock_on or []:
            for node in nodes_named_by(nodes, k.get("file"), k.get("line"), [k.get("op") or ""]):
                found.setdefault(node.id, NodeVerdict(
                    ok=False, status="knock-on",
                    why=f"fails only because of {culprits.cause_of(diag)} (line {diag.line})"))
    error = verdict.error
    if error is not None and error.kind != ErrorKind.UNSUPPORTED_OP:
        for node in nodes_named_by(nodes, error.file, error.line, [error.op or ""]):
            found.setdefault(node.id, NodeVerdict(ok=False, status="rejected", why=_why(error)))
    if verdict.ok:
        module = NodeVerdict(ok=True)
    elif verdict.culprits:
        module = NodeVerdict(ok=False, status="rejected",
                             why=f"{len(verdict.culprits)} rejected "
                                 f"{'op' if len(verdict.culprits) == 1 else 'ops'}")
    else:
        module = NodeVerdict(ok=False, status="rejected",
                             why=_why(error) if error else "the lowering failed")
    return found, module


def _rewrite_for(op: str, used: Sequence[str]) -> str:
    """The rewrite (`erfinv@tosa`) among `used` that names the op, else all of them."""
    named = [r for r in used if r.split("@", 1)[0].split(".")[-1] == _base(op)]
    return ", ".join(named or used)


def apply_verdicts(graph: ModuleGraph, target: str, result: LowerResult,
                   plain: LowerResult | None = None) -> None:
    """Set each node's verdict at `target` from the module's lowering `result`; `plain`, when
    the module goes through rewrites, is its lowering without them (what they took it past)."""
    found, module = _verdicts_of(graph.nodes, result)
    before = _verdicts_of(graph.nodes, plain)[0] if plain is not None else {}
    unknown = not module.ok and not any(v.status == "rejected" for v in found.values())
    for node in graph.nodes:
        verdict = found.get(node.id)
        if verdict is None and node.id in before and result.rewrites:
            verdict = NodeVerdict(ok=True, status="rewritten",
                                  rewrite=_rewrite_for(node.op, result.rewrites),
                                  why=f"lowered through the rewrite "
                                      f"{_rewrite_for(node.op, result.rewrites)}")
        if verdict is None:
            verdict = (NodeVerdict(ok=None, status="unknown", why=module.why) if unknown
                       else NodeVerdict(ok=True))
        node.targets[target] = verdict
    _block_calls(graph, target)
    graph.verdicts[target] = module


def _block_calls(graph: ModuleGraph, target: str) -> None:
    """A call of a repeated block's function takes the verdict of the function's ops."""
    parent = {g.id: g.parent for g in graph.groups}

    def inside(group: str | None, block: str) -> bool:
        while group is not None:
            if group == block:
                return True
            group = parent.get(group)
        return False

    for call in (n for n in graph.nodes if n.block):
        own = [n.targets[target] for n in graph.nodes
               if not n.block and inside(n.group, call.block or "") and target in n.targets]
        bad = [v for v in own if v.ok is False]
        if bad:
            call.targets[target] = NodeVerdict(
                ok=False, status="rejected",
                why=f"its block has {len(bad)} rejected {'op' if len(bad) == 1 else 'ops'}: "
                    f"{bad[0].why}")
        elif any(v.status == "rewritten" for v in own):
            call.targets[target] = NodeVerdict(ok=True, status="rewritten",
                                               why="its block goes through a rewrite")

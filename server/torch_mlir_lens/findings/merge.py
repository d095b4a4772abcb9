"""One cause failing several backends, said once: the findings of one line merged.

`check` keeps one finding per backend (its rules and baselines are per backend); the editor
shows one diagnostic per cause and line naming every backend it fails. Both words come from
`wording.py`: here a group of findings becomes one, its message naming the backends, their
reasons, and the library lines and knock-on ops of all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.findings.finding import Finding, Related
from torch_mlir_lens.findings.wording import op_message, ordered_targets, with_library
from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.rules.targets import target_title


@dataclass
class Merged:
    """The findings of one cause at one line, as one."""

    first: Finding
    message: str
    targets: list[str]
    related: list[Related] = field(default_factory=list)  # library lines, first seen first
    knock_on: list[Related] = field(default_factory=list)
    rewrites: list[dict[str, Any]] = field(default_factory=list)  # proven, per backend

    @property
    def code(self) -> str:
        """What identifies it: the rejected op, else the kind."""
        return self.first.op or str(self.first.kind)


def group_key(finding: Finding) -> tuple[Any, ...]:
    """What findings of the same line share to be said once: the cause of a rejected op (any
    backend), else the very same problem."""
    if finding.kind == ErrorKind.UNSUPPORTED_OP and finding.op:
        return ("op", finding.cause or finding.op)
    return ("other", finding.kind, finding.message)


def merged(group: Sequence[Finding]) -> Merged:
    """One finding for a group that shares `group_key` and a line."""
    first = group[0]
    targets = ordered_targets(f.target for f in group if f.target)
    related = _unique(r for f in group for r in f.related)  # a library line once
    knock_on = list(dict.fromkeys(r for f in group for r in f.knock_on))  # each op at its line
    if first.kind == ErrorKind.UNSUPPORTED_OP and first.op and len(group) > 1:
        message = with_library(op_message(
            first.cause, f"`{first.op}`", targets,
            reasons={f.target: f.why for f in group if f.target and f.why}), related)
    elif first.kind == ErrorKind.UNSUPPORTED_OP:
        message = first.message  # worded for its one backend already
    else:
        message = first.message
        if first.kind == ErrorKind.LOWERING_ERROR and targets:
            message = f"{message} ({', '.join(target_title(t) for t in targets)})"
    order = {t: i for i, t in enumerate(ordered_targets(f.target for f in group if f.target))}
    # A module-wide finding's way past (a pin past an export refusal) holds for every backend.
    rewrites = [{"target": f.target or "*", "rewrites": list(f.rewrite["rewrites"]),
                 "maxAbs": f.rewrite.get("max_abs"), "op": f.op}
                for f in sorted(group, key=lambda f: order.get(f.target or "", -1))
                if f.rewrite and f.rewrite.get("rewrites")]
    return Merged(first, message, targets, related, knock_on, rewrites)


def _unique(items: Any) -> list[Related]:
    out: list[Related] = []
    seen: set[tuple[str, int]] = set()
    for r in items:
        if (r.file, r.line) not in seen:
            seen.add((r.file, r.line))
            out.append(r)
    return out

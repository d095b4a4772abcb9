"""Calls with one digest form a group: one function of the weights computes each of them.

A group needs at least two calls and a block worth a function (`MIN_BLOCK_OPS` ops: a repeated
`nn.Linear` stays inline). Calls with a problem (`record.py`) are left inline, with it as the
reason; so are both calls of one block when the same inputs gave two different computations
(the block changed between its calls). Each group's function is named after the block's class
(`@LlamaDecoderLayer`, then `@LlamaDecoderLayer_1` for a second group of that class).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from torch_mlir_lens.worker.blocks.record import BlockCall

MIN_BLOCK_OPS = 6  # fewer ATen ops than this: not worth a function of its own


@dataclass
class Group:
    """Calls proven to run the same computation, each on its own weights."""

    symbol: str  # the function's name in the IR
    calls: list[BlockCall]

    @property
    def representative(self) -> BlockCall:
        """The call whose block is exported (a recorded one)."""
        return next((c for c in self.calls if c.recorded), self.calls[0])

    @property
    def class_name(self) -> str:
        return type(self.representative.module).__name__


@dataclass
class Grouping:
    """The groups of a survey, and the calls left inline with why."""

    groups: list[Group] = field(default_factory=list)
    inline: list[tuple[str, str]] = field(default_factory=list)  # (block path, reason)


def _symbol_base(name: str) -> str:
    return re.sub(r"\W", "_", name) or "block"


def group_calls(calls: list[BlockCall]) -> Grouping:
    """The proven groups among `calls` (in first-call order)."""
    out = Grouping()
    by_key: dict[str, set[str]] = {}
    for call in calls:
        if call.problem is None:
            by_key.setdefault(call.call_key, set()).add(call.digest)
    by_digest: dict[str, list[BlockCall]] = {}
    for call in calls:
        if call.problem is not None:
            out.inline.append((call.path, call.problem))
        elif len(by_key[call.call_key]) > 1:
            out.inline.append((call.path, "the same inputs ran different ops in two calls"))
        elif call.ops < MIN_BLOCK_OPS:
            out.inline.append((call.path, f"{call.ops} ops: too small for a function"))
        else:
            by_digest.setdefault(call.digest, []).append(call)
    used: Counter[str] = Counter()
    for members in by_digest.values():
        if len(members) < 2:
            out.inline.append((members[0].path, "no other block runs the same ops"))
            continue
        base = _symbol_base(type(members[0].module).__name__)
        symbol = base if not used[base] else f"{base}_{used[base]}"
        used[base] += 1
        out.groups.append(Group(symbol, members))
    return out


__all__ = ["MIN_BLOCK_OPS", "Group", "Grouping", "group_calls"]

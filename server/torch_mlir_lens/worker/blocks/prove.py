"""Calls with one digest form a group: one function of the weights computes each of them.

A group needs at least two calls and a block worth a function (`MIN_BLOCK_OPS` ops: a repeated
`nn.Linear` stays inline). Calls with a problem (`record.py`) are left inline, with it as the
reason; so are both calls of one block when the same inputs gave two different computations
(the block changed between its calls). Each group's function is named after the block's class
(`@LlamaDecoderLayer`, then `@LlamaDecoderLayer_1` for a second group of that class).

A chain is a run of consecutive calls of one group where each call takes the previous one's
only result in one place and the very same tensors elsewhere (`x = layer(x, cos, sin)` in a
loop), and nothing else (no op of the parent, no other block, not the forward's result)
touches the results in between: the parent's export can then show the whole run as one op,
whatever its length (`stub.py`), and the stitch expands it into one call per block.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

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
class Chain:
    """Consecutive calls of one group, each fed the previous one's result at `carried`."""

    group: Group
    calls: list[BlockCall]
    carried: int  # the position, among a call's tensor inputs, of the previous result


@dataclass
class Grouping:
    """The groups of a survey, their chains, and the calls left inline with why."""

    groups: list[Group] = field(default_factory=list)
    inline: list[tuple[str, str]] = field(default_factory=list)  # (block path, reason)
    chains: list[Chain] = field(default_factory=list)


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


def _tensors(call: BlockCall) -> list[Any]:
    return [call.leaves[p] for p in call.tensor_at]


def _link(before: BlockCall, after: BlockCall) -> int | None:
    """Where `after` takes `before`'s only result, all its other tensors being `before`'s;
    None when the two calls are no link of a chain."""
    if len(before.returned) != 1 or not isinstance(before.returned[0], torch.Tensor) or \
            [o.kind for o in before.outputs] != ["result"]:
        return None
    result = before.returned[0]
    old, new = _tensors(before), _tensors(after)
    if len(old) != len(new):
        return None
    at = [i for i, t in enumerate(new) if t is result]
    if len(at) != 1 or any(a is not b for i, (a, b) in enumerate(zip(old, new, strict=True))
                           if i != at[0]):
        return None
    return at[0]


def find_chains(calls: list[BlockCall], grouping: Grouping, seen: dict[int, Any]) -> None:
    """Fill `grouping.chains`: runs of two calls or more (`seen`: id() of the tensors the
    parent read or returned, the survey's)."""
    group_of = {id(c): g for g in grouping.groups for c in g.calls}
    used: dict[int, int] = {}  # id(tensor) → how many block calls take it
    for call in calls:
        for tensor in {id(t): t for t in _tensors(call)}:
            used[tensor] = used.get(tensor, 0) + 1
    run: list[BlockCall] = []
    carried: int | None = None

    def close() -> None:
        if len(run) >= 2 and carried is not None:
            grouping.chains.append(Chain(group_of[id(run[0])], list(run), carried))

    for call in calls:
        if run and group_of.get(id(call)) is group_of.get(id(run[-1])) is not None:
            at = _link(run[-1], call)
            result = run[-1].returned[0] if at is not None else None
            if at is not None and (carried is None or at == carried) and id(result) not in seen \
                    and used.get(id(result)) == 1:
                run.append(call)
                carried = at
                continue
        close()
        run, carried = ([call], None) if id(call) in group_of else ([], None)
    close()


__all__ = ["MIN_BLOCK_OPS", "Chain", "Group", "Grouping", "find_chains", "group_calls"]

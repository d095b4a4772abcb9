"""What a rewrite is: decomposition-table entries that replace an op a backend rejects.

A `Rewrite` answers one or more culprit ops (`culprits`, named as the Torch dialect names
them: `aten.erfinv`, `aten.slice.Tensor`) with entries of a decomposition table (`entries`:
op overload name → a plain PyTorch function). Applied at export time, like torch-mlir's own
decompositions, so the user's code is never edited; a function may return `NotImplemented` to
leave a call as it is (a `cat` with no empty operand).

Where they come from (`source`): this repository's library (library/), torch's own tables
beyond those torch-mlir uses (`torch._decomp`, `torch._refs`). None is offered before
proof.py has checked it on the module at hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

LIBRARY = "library"
TORCH_DECOMP = "torch._decomp"
TORCH_REFS = "torch._refs"

# Which nodes around a culprit the rewrite acts on: the op alone, or with the values it
# makes and uses that are empty (zero-sized) and their direct users.
OP = "op"
EMPTY_REGION = "empty-region"


def overload(name: str) -> Any:
    """`aten.erfinv.default` → torch.ops.aten.erfinv.default (None if there is none)."""
    parts = name.split(".")
    if len(parts) != 3:
        return None
    packet = getattr(getattr(torch.ops, parts[0], None), parts[1], None)
    return getattr(packet, parts[2], None) if packet is not None else None


def mlir_name(op: Any) -> str:
    """The Torch dialect's short name of an op overload: `aten.erfinv.default` →
    `aten.erfinv`, `aten.slice.Tensor` stays."""
    packet = op._schema.name.replace("::", ".")  # "aten::erfinv" → "aten.erfinv"
    name = op._overloadname
    return packet if name == "default" else f"{packet}.{name}"


def overload_of(culprit: str) -> Any:
    """The overload a culprit names (`aten.erfinv` → aten.erfinv.default), or None."""
    dotted = culprit.removeprefix("torch.")
    return overload(dotted if dotted.count(".") == 2 else f"{dotted}.default")


@dataclass(frozen=True)
class Rewrite:
    """A way past ops a backend rejects, as decomposition-table entries."""

    name: str  # what `rewrites=NAME@tosa` names
    culprits: tuple[str, ...]  # the ops it answers (`aten.erfinv`)
    entries: tuple[tuple[str, Callable[..., Any]], ...]  # overload name → function
    method: str  # one line: how it computes the op
    source: str = LIBRARY
    domain: tuple[float, ...] = ()  # edge values of its domain, tried beyond the generic ones
    scope: str = OP
    # Whether the dtype's largest finite values belong to its domain: not for a rewrite that
    # sums in another order than the op (a convolution per group, a one-hot scatter), whose
    # partial sums overflow where the op's may not; its docstring says so.
    extremes: bool = True
    # Whether infinities and NaN belong to its domain: not for a convolution, whose result
    # on them depends on the algorithm PyTorch picks (how padding and weights meet them).
    nonfinite: bool = True
    # Functions the export code inlines before the entries (helpers the entries call).
    helpers: tuple[Callable[..., Any], ...] = field(default=())

    def table(self) -> dict[Any, Callable[..., Any]]:
        """The entries as a decomposition table (overloads this torch lacks are left out)."""
        out = {}
        for name, fn in self.entries:
            op = overload(name)
            if op is not None:
                out[op] = fn
        return out

    def answers(self, culprit: str) -> bool:
        """Whether this rewrite is meant for the op a culprit names."""
        return culprit.removeprefix("torch.") in self.culprits


def table_of(rewrites: list[Rewrite]) -> dict[Any, Callable[..., Any]]:
    """The entries of several rewrites as one table (a later rewrite's entry wins)."""
    out: dict[Any, Callable[..., Any]] = {}
    for rewrite in rewrites:
        out.update(rewrite.table())
    return out


__all__ = ["EMPTY_REGION", "LIBRARY", "OP", "TORCH_DECOMP", "TORCH_REFS", "Rewrite",
           "mlir_name", "overload", "overload_of", "table_of"]

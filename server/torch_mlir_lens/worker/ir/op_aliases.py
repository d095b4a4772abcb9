"""Which aten ops torch documents as aliases of each other, read from torch's own docstrings.

torch keeps no table of aliases that Python can read, but its docs mark each one:
`torch.erfinv` is "Alias for :func:`torch.special.erfinv`.", `Tensor.clip_` "Alias for
:meth:`~Tensor.clamp_`.". An op that torch.export turned into a single other op with the same
signature is only sometimes an alias: `torch.special.erfinv` → `aten.erfinv` is one,
`Tensor.reshape` → `aten.view` is a decomposition that happened to make one op. The docs tell
them apart.
"""

from __future__ import annotations

import functools
import re
from typing import Any

# "Alias for :func:`torch.special.erfinv`", "Alias of :func:`torch.cat`",
# "Alias for :meth:`~Tensor.clamp_`"
_ALIAS_FOR = re.compile(r"Alias (?:for|of) :(?:func|meth):`~?([\w.]+)`")
# aten's names for the functions of torch's namespaces: torch.special.erfinv is special_erfinv.
NAMESPACES = ("special", "linalg", "fft")


def aten_name(python_name: str) -> str:
    """The aten op a documented Python name stands for: `torch.special.erfinv` →
    `special_erfinv`, `Tensor.clamp_` → `clamp_`, `torch.nn.functional.gelu` → `gelu`."""
    name = python_name.removeprefix("torch.").removeprefix("Tensor.")
    name = name.removeprefix("nn.functional.")
    head, _, rest = name.partition(".")
    if rest and head in NAMESPACES:
        return f"{head}_{rest}"
    return name.rsplit(".", 1)[-1]


def _python_functions(op_name: str) -> list[Any]:
    """The Python functions torch offers for aten op `op_name` ("special_erfinv", "clip")."""
    import torch

    found = [getattr(torch, op_name, None), getattr(torch.Tensor, op_name, None),
             getattr(torch.nn.functional, op_name, None)]
    head, _, rest = op_name.partition("_")
    if head in NAMESPACES and rest:
        found.append(getattr(getattr(torch, head, None), rest, None))
    return [f for f in found if f is not None]


@functools.cache
def documented_aliases(op_name: str) -> frozenset[str]:
    """The aten names `op_name`'s docs call it an alias of (without overloads or `aten.`)."""
    names: set[str] = set()
    for function in _python_functions(op_name):
        for match in _ALIAS_FOR.finditer(getattr(function, "__doc__", None) or ""):
            names.add(aten_name(match.group(1)))
    names.discard(op_name)
    return frozenset(names)


def _op_name(op: str) -> str:
    """`aten.special_erfinv.default` / `aten.special_erfinv` → `special_erfinv`."""
    parts = op.split(".")
    return parts[1] if len(parts) >= 2 and parts[0] == "aten" else op


def are_aliases(op: str, other: str) -> bool:
    """Whether torch's docs make `op` and `other` one op under two names: one names the
    other, or both name a third (`torch.special.psi` and `torch.digamma` are both aliases of
    `torch.special.digamma`)."""
    a, b = _op_name(op), _op_name(other)
    if a == b:
        return True
    a_names, b_names = documented_aliases(a) | {a}, documented_aliases(b) | {b}
    return bool(a_names & b_names)

"""Which example tensor dim each entry of a `dynamic_shapes` spec names.

torch.export takes the spec keyed like `forward`'s parameters (a dict by name, or a tuple in
order), each tensor's entry a `{dim: Dim}` dict (or a list, one entry per dim), containers
nested like the inputs. Verify names the sizes it runs by these names, and an export error
names the example input behind a dim.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class NamedDim:
    """One dim of one example tensor, and the name the spec gives it."""

    name: str  # the Dim's name ("batch")
    input: str  # the input, as people write it: "ids", "pair[0]", "batch['mask']"
    tensor: torch.Tensor
    axis: int


def named_dims(fn: Any, args: Sequence[Any], kwargs: dict[str, Any],
               spec: Any) -> list[NamedDim]:
    """Every (example tensor, dim) the spec names, in the spec's order."""
    if spec is None:
        return []
    forward = getattr(fn, "forward", fn)
    try:
        bound = inspect.signature(forward).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return []
    values = list(bound.arguments.items())
    found: list[NamedDim] = []

    def walk(label: str, value: Any, sub: Any) -> None:
        if isinstance(value, torch.Tensor):
            entries = sub.items() if isinstance(sub, dict) else (
                enumerate(sub) if isinstance(sub, list | tuple) else ())
            for axis, dim in entries:
                name = getattr(dim, "__name__", None)
                if isinstance(axis, int) and isinstance(name, str) and value.dim():
                    found.append(NamedDim(name, label, value, axis % value.dim()))
        elif isinstance(value, dict) and isinstance(sub, dict):
            for key, item in value.items():
                if key in sub:
                    walk(f"{label}[{key!r}]", item, sub[key])
        elif isinstance(value, list | tuple) and isinstance(sub, list | tuple):
            for i, (item, item_sub) in enumerate(zip(value, sub, strict=False)):
                walk(f"{label}[{i}]", item, item_sub)

    if isinstance(spec, dict):
        for name, value in values:
            if name in spec:
                walk(name, value, spec[name])
    elif isinstance(spec, list | tuple):
        for (name, value), sub in zip(values, spec, strict=False):
            walk(name, value, sub)
    return found

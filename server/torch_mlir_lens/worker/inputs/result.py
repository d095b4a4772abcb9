"""`ResolvedInputs`: what input resolution answers (arguments, constructor arguments, source)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ResolvedInputs:
    """Example inputs and constructor arguments of one module, and where they came from."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    init_args: tuple[Any, ...]
    init_kwargs: dict[str, Any]
    dynamic_shapes: dict[str, Any] | tuple[Any, ...] | None
    source: str  # "cli", "inputs-file", "comment", "convention:<which>", "settings", ...
    detail: str = ""  # how, for people: the expression, the file, the parent, the layer
    # An instance already built while resolving (conventions, inference): reused by instantiate().
    instance: Any = field(default=None, repr=False, compare=False)
    # Where `dynamic_shapes` was written (file, line of the `dynamic=` comment): export errors
    # about dynamic dims are placed there.
    dynamic_at: tuple[str, int] | None = None

"""Which rewrites a module is lowered with, as the user writes them (no torch).

    # torch-mlir-lens: rewrites=erfinv@tosa, histc
    [tool.torch-mlir-lens] rewrites = ["erfinv@tosa"]      (pyproject.toml, every module)
    torch-mlir-lens check --rewrites auto                  (every proven rewrite)

An item is `NAME@BACKEND` (only that backend lowers through it) or `NAME` (every backend);
`auto` takes every rewrite the worker proves for a culprit (worker/rewrites/offers.py). The
names are those of worker/rewrites/ (`erfinv`, `histc`, `empty_tensors`, `decomp.<op>`,
`refs.<op>`): a name no rewrite has is an error when the module is lowered.

    parse_specs(text)            → [RewriteSpec]; ValueError saying what is wrong
    names_for(specs, backend)    → the names `backend` lowers with ("auto" included)
    with_spec(text, name, backend) → the `rewrites=` value with one more item
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from torch_mlir_lens.rules.targets import BACKENDS

AUTO = "auto"
_ITEM = re.compile(r"^([A-Za-z_][\w.]*)\s*(?:@\s*([A-Za-z_]\w*))?$")


@dataclass(frozen=True)
class RewriteSpec:
    """One item: a rewrite's name and the backend it is for (None: every backend)."""

    name: str
    backend: str | None = None

    def __str__(self) -> str:
        return f"{self.name}@{self.backend}" if self.backend else self.name


def parse_specs(text: str | Iterable[str] | None) -> list[RewriteSpec]:
    """The items of a `rewrites=` value (or a list of items); ValueError naming a bad one."""
    if text is None:
        return []
    items = text.split(",") if isinstance(text, str) else list(text)
    specs: list[RewriteSpec] = []
    for raw in items:
        item = str(raw).strip()
        if not item:
            continue
        m = _ITEM.match(item)
        if m is None:
            raise ValueError(f"`{item}` is not a rewrite: write NAME@BACKEND or NAME")
        backend = m.group(2)
        if backend is not None and backend not in BACKENDS:
            raise ValueError(f"`{item}`: unknown backend `{backend}` "
                             f"(one of {', '.join(BACKENDS)})")
        spec = RewriteSpec(m.group(1), backend)
        if spec not in specs:
            specs.append(spec)
    return specs


def names_for(specs: Iterable[RewriteSpec], backend: str) -> list[str]:
    """The rewrite names `backend` is lowered with, in order (`auto` among them if asked)."""
    return list(dict.fromkeys(s.name for s in specs if s.backend in (None, backend)))


def spec_text(specs: Iterable[RewriteSpec]) -> str:
    """The `rewrites=` value of these items."""
    return ", ".join(str(s) for s in specs)


def with_spec(text: str | None, name: str, backend: str | None) -> str:
    """`text` (a `rewrites=` value, or None) with `name@backend` added once; an item for every
    backend already there stands for it."""
    try:
        specs = parse_specs(text)
    except ValueError:
        specs = []
    if RewriteSpec(name) not in specs and RewriteSpec(name, backend) not in specs:
        if backend is None:  # one item for every backend replaces the per-backend ones
            specs = [s for s in specs if s.name != name]
        specs.append(RewriteSpec(name, backend))
    return spec_text(specs)


__all__ = ["AUTO", "RewriteSpec", "names_for", "parse_specs", "spec_text", "with_spec"]

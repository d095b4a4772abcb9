"""Which rewrites a module is lowered with, as the user writes them (no torch).

    # torch-mlir-lens: rewrites=erfinv@tosa, histc
    [tool.torch-mlir-lens] rewrites = ["erfinv@tosa"]      (pyproject.toml, every module)
    torch-mlir-lens check --rewrites auto                  (every proven rewrite)

An item is `NAME@BACKEND` (only that backend lowers through it) or `NAME` (every backend);
`auto` takes every rewrite the worker proves for a culprit (worker/rewrite_jobs/offers.py). The
names are those of worker/rewrites/ (`erfinv`, `histc`, `empty_tensors`, `decomp.<op>`,
`refs.<op>`): a name no rewrite has is an error when the module is lowered. Two kinds act at
export, for every backend, past an export refusal (`at_export`): a pin (`pin.vq.initted`) and
the export specialised to the example's decisions (`export.specialize`).

    parse_specs(text)            → [RewriteSpec]; ValueError saying what is wrong
    command_line_items(text)     → `--rewrites` as the items a job lowers with ([] for `off`)
    names_for(specs, backend)    → the names `backend` lowers with ("auto" included)
    with_spec(text, name, backend) → the `rewrites=` value with one more item
    comment_edit(lines, info, names, backend) → the one-line edit recording them in the
                                   module's comment (the quick fix, SARIF `fixes`)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from torch_mlir_lens.discovery.model import ModuleInfo
from torch_mlir_lens.protocol.rewrite_results import PIN_PREFIX, SPECIALIZE, at_export
from torch_mlir_lens.rules.targets import BACKENDS, target_title

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


def command_line_items(text: str | None) -> list[str]:
    """The `--rewrites` items a job lowers with ([] for none, or for check's `off`);
    ValueError when one cannot be read."""
    if not text or text.strip() == "off":
        return []
    return [str(spec) for spec in parse_specs(text)]


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


_REWRITES_ONLY = re.compile(r"^(\s*)#\s*torch-mlir-lens\s*:\s*rewrites\s*=[^;]*$",
                            re.IGNORECASE)


@dataclass(frozen=True)
class CommentEdit:
    """A one-line edit of a file: `text` replaces line `line` (1-based), or is inserted
    before it."""

    line: int
    replace: bool
    text: str


def comment_edit(lines: list[str], info: ModuleInfo, pairs: list[tuple[str, str | None]],
                 ) -> CommentEdit:
    """The edit that records rewrites (`(name, backend)` pairs) in the module's
    `# torch-mlir-lens:` comment: its own `rewrites=` line rewritten when it has one, else a
    new line at the end of the comment block (above the decorators), where a key overrides
    the same key above it. A name for every backend is written once, without a backend."""
    ann = info.annotation
    value = ann.rewrites if ann is not None else None
    for name, backend in pairs:
        value = with_spec(value, name, backend)
    value = spec_text(_collapsed(parse_specs(value)))
    at = ann.key_lines.get("rewrites") if ann is not None and ann.rewrites else None
    if at is not None and 0 < at <= len(lines):
        own = _REWRITES_ONLY.match(lines[at - 1])
        if own is not None:
            return CommentEdit(at, True, f"{own.group(1)}# torch-mlir-lens: rewrites={value}")
    start = info.decorator_line or info.line
    head = lines[start - 1] if 0 < start <= len(lines) else ""
    indent = head[: len(head) - len(head.lstrip())]
    return CommentEdit(start, False, f"{indent}# torch-mlir-lens: rewrites={value}")


def _collapsed(specs: list[RewriteSpec]) -> list[RewriteSpec]:
    """One item without a backend for a name written for every backend."""
    out: list[RewriteSpec] = []
    for spec in specs:
        every = {s.backend for s in specs if s.name == spec.name} >= set(BACKENDS)
        item = RewriteSpec(spec.name) if every else spec
        if item not in out:
            out.append(item)
    return out


def offer_title(op: str, target: str, names: list[str], max_abs: float | None) -> str:
    """How a proven rewrite is offered (the quick fix, SARIF's fix): "Lower `aten.erfinv` on
    TOSA through a rewrite (max error 3e-07 on the example inputs)"."""
    kind = "a rewrite" if len(names) == 1 else f"{len(names)} rewrites"
    error = f" (max error {max_abs:.2g} on the example inputs)" if max_abs is not None else ""
    return f"Lower `{op}` on {target_title(target)} through {kind}{error}"


def pin_title(names: list[str], max_abs: float | None) -> str:
    """How a proven way past an export refusal is offered (the quick fix, SARIF's fix):
    "Export past the refusal: pin `vq.initted` to its value (max error 0 on the example
    inputs)", or "Export past the refusal: specialise it to the example's decisions"."""
    pinned = ", ".join(f"`{n.removeprefix(PIN_PREFIX)}`" for n in names if n != SPECIALIZE)
    error = f" (max error {max_abs:.2g} on the example inputs)" if max_abs is not None else ""
    ways = ([f"pin {pinned} to its value"] if pinned else []) + (
        ["specialise it to the example's decisions"] if SPECIALIZE in names else [])
    return f"Export past the refusal: {' and '.join(ways)}{error}"


__all__ = [
    "AUTO",
    "PIN_PREFIX",
    "SPECIALIZE",
    "CommentEdit",
    "RewriteSpec",
    "at_export",
    "comment_edit",
    "names_for",
    "offer_title",
    "parse_specs",
    "pin_title",
    "spec_text",
    "with_spec",
]

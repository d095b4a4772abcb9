"""What discovery reports (one `ModuleInfo` per lowerable class or function of a file), and
which of them holds a given line."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from torch_mlir_lens.source.annotations import InputAnnotation


@dataclass
class FirstLayer:
    """The statically found first layer of a module: its torch.nn class name and literal args."""

    kind: str  # "Linear", "Conv2d", ...
    params: dict[str, Any] = field(default_factory=dict)  # literal constructor args by name
    attr: str | None = None  # the `self.<attr>` of the outermost module that leads to it


@dataclass
class ModuleInfo:
    """One lowerable thing in a file.

    Lines are 1-based. `line` is the `class`/`def` line itself (decorators excluded; their first
    line is `decorator_line`); `end_line` is the last line of the body. `name_col`/`name_end_col`
    are 0-based columns of the name on `line`. For nested classes `name` is the dotted qualified
    name (`Outer.Inner`). `parent_candidates` are the module classes of this file whose bodies
    use this class (by name), i.e. where derived inputs can be recorded.
    """

    name: str
    kind: str  # "class" | "function"
    line: int
    end_line: int
    name_col: int
    name_end_col: int
    forward_line: int | None
    forward_end_line: int | None
    bases: list[str]
    inputs: str  # "comment" | "convention" | "settings" | "derived" | "inferred" | "missing"
    annotation: InputAnnotation | None
    parent_candidates: list[str] = field(default_factory=list)
    decorator_line: int = 0
    forward_params: list[str] = field(default_factory=list)  # without self
    forward_required: int = 0  # positional parameters of forward without default
    init_required: list[str] = field(default_factory=list)  # constructor params without default
    init_defaults: dict[str, Any] = field(default_factory=dict)  # literal constructor defaults
    convention: str | None = None  # which convention applies (e.g. "example_input_array")
    settings_key: str | None = None  # the settings key that matched
    first_layer: FirstLayer | None = None
    annotate_args: str | None = None  # source of the `@annotate_args(...)` argument on forward
    # Module classes of sibling files (same folder) that import and use this class and have
    # inputs themselves, as "file.py::Class": derived inputs across files.
    sibling_parents: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict of every field (the annotation and first layer as nested dicts)."""
        return asdict(self)


def module_at_line(modules: list[ModuleInfo], line: int) -> ModuleInfo | None:
    """The innermost module whose range (decorators included) holds the 1-based `line`."""
    best: ModuleInfo | None = None
    best_start = 0
    for m in modules:
        start = min(m.decorator_line or m.line, m.line)
        if start <= line <= m.end_line and (best is None or start >= best_start):
            best, best_start = m, start
    return best

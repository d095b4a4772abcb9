"""One finding: a problem of one module (or file) at one backend, editor-neutral.

The language server and `check` both show findings; neither decides what one says. A finding
is made in one place (`make.py`, from the worker's results) with its rule, its words, its
severity, where it is (a file's line, a notebook's cell, an ONNX model's node), why the
backend refuses it, the lines behind it (library frames, ops failing only because of it) and
the proven way past it. The editor places it in a document (`lsp/checks/finding_records.py`)
and `check` in a report (`repo_check/`): both only render it.

Rule ids: `<target>/<op>` for an op a backend cannot lower (`tosa/aten.roll`),
`<target>/<kind>` for a backend's other failures (`linalg/lowering-error`), and `<kind>` for
what fails before any backend (`export-error`, `load-error`, `timeout`, `worker-crash`,
`memory-limit`, `inputs-missing`, `syntax-error`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from torch_mlir_lens.protocol.onnx_graphs import OnnxNode
from torch_mlir_lens.protocol.results import ErrorKind

# Failures that happen before a backend is involved: one finding per module, not per target.
MODULE_KINDS = frozenset({
    ErrorKind.EXPORT_ERROR, ErrorKind.LOAD_ERROR, ErrorKind.SYNTAX_ERROR,
    ErrorKind.UNKNOWN_MODULE, ErrorKind.INPUTS_MISSING, ErrorKind.BAD_INPUTS,
    ErrorKind.BAD_REQUEST, ErrorKind.WORKER_CRASH, ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT,
    ErrorKind.CANCELLED,
})
# Failures of the worker itself: shown on the module, not on a line.
WORKER_KINDS = frozenset({ErrorKind.WORKER_CRASH, ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT})
# How a baseline key's middle part names an ONNX node rather than a module ("node:conv1",
# "node:#3" for an unnamed one): `Finding.baseline_key`, repo_check/baseline.py.
NODE_KEY = "node:"


@dataclass(frozen=True)
class Related:
    """Another place that explains a finding: a library line behind it, an op that fails only
    because of it."""

    file: str
    line: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Related:
        return cls(str(data["file"]), int(data["line"]), str(data.get("message", "")))


@dataclass
class Finding:
    """One problem of one module (or of a file: `module` None), located when a line is known.

    `file` and `module_file` are paths as their maker gives them (absolute in the editor,
    relative to the project root in `check`'s reports). `line` is 1-based (an ONNX model's
    node position, with `node` set); None puts the finding on the module itself.
    """

    rule: str
    kind: str
    message: str
    file: str
    line: int | None
    module_file: str  # the module's own file (a baseline's key)
    module: str | None
    module_line: int | None
    target: str | None = None  # the backend it concerns (None: before any backend)
    op: str | None = None  # the rejected op, as people know it (`aten.roll`)
    severity: str = "error"  # "error" | "warning" | "information"
    cause: str | None = None  # what the user wrote: "`torch.roll` (decomposed to ...)"
    why: str | None = None  # why the backend refuses it
    related: tuple[Related, ...] = ()  # the library lines behind it, innermost first
    knock_on: tuple[Related, ...] = ()  # ops failing only because of it, at their lines
    node: OnnxNode | None = None  # in an ONNX model: the node it is about
    # Shown on the module itself rather than at `line`: a worker failure, no line known.
    on_module: bool = False
    # In a notebook: the cells of `line` and `module_line` (the lines then within the cell).
    cell: int | None = None
    module_cell: int | None = None
    # The proven way past it, or why there is none (findings/proven.py); None: not asked.
    rewrite: dict[str, Any] | None = None
    baselined: bool = False  # accepted by a baseline (`check --baseline`)

    @property
    def baseline_key(self) -> tuple[str, str, str]:
        """(module file, module, rule): stable under edits that only move lines. In an ONNX
        model, whose one graph is its module, a finding at a node is keyed by the node
        instead: its name, else its position (`NODE_KEY`)."""
        if self.node is not None:
            where = self.node.name or f"#{self.node.index}"
            return (self.module_file or self.file, NODE_KEY + where, self.rule)
        return (self.module_file or self.file, self.module or "", self.rule)

    def to_json(self) -> dict[str, Any]:
        """As reports write it: every field, the optional ones only when set."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _OPTIONAL and value in (None, (), False, "error"):
                continue
            if f.name in ("related", "knock_on"):
                value = [r.to_json() for r in value]
            elif f.name == "node" and value is not None:
                value = value.to_json()
            data[f.name] = value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        """A finding as `to_json` wrote it (older reports: the fields they had)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["related"] = tuple(Related.from_json(r) for r in data.get("related") or [])
        values["knock_on"] = tuple(Related.from_json(r) for r in data.get("knock_on") or [])
        node = data.get("node")
        values["node"] = OnnxNode.from_json(node) if isinstance(node, dict) else None
        for name in ("rule", "kind", "message", "file", "module_file"):
            values[name] = str(values.get(name) or "")
        for name in ("line", "module", "module_line"):
            values.setdefault(name, None)
        return cls(**values)

    def sort_key(self) -> tuple[Any, ...]:
        return (self.module_file, self.module_cell or 0, self.module_line or 0,
                self.module or "", self.file, self.cell or 0, self.line or 0, self.rule)


# Fields left out of JSON at their default: the reports of a plain run keep their shape.
_OPTIONAL = frozenset({"severity", "cause", "why", "related", "knock_on", "node",
                       "on_module"})

__all__ = ["MODULE_KINDS", "NODE_KEY", "WORKER_KINDS", "Finding", "Related"]

"""A module's computation graph with each node's verdict per backend, as plain data.

The worker's `graph` job answers `ModuleGraph.to_json()`; `torch-mlir-lens graph --format json`
writes it, the HTML page and the editor's graph view draw it. Torch-free.

- A node is one ATen op of the exported program (or an input, an output, a call of a repeated
  block's function), at its Python line (`line`, the innermost line of the user's files), the
  library line it was made at when the op comes from library code (`library_line`), and the
  lines of the Torch IR it became (`ir_lines`, 1-based lines of `ModuleGraph.ir`).
- `targets` holds one `NodeVerdict` per backend: lowered, rejected (with why), lowered
  through a rewrite, or failing only because of another op (knock-on).
- Groups are the module hierarchy (`layers.3.attn`, with its class), nested by `parent`; a
  repeated block's function (its blocks traced once) is one group of kind "block" that the
  nodes calling it point to (`Node.block`), shown once however many layers call it.
- An edge carries the type of the value it passes (`f32[2, 32]`).
- When Verify has run, `ModuleGraph.verify` is its verdict (`{"ok", "message", "line"}`) and
  each node of the first line whose compiled values differ from eager (or of another line
  Verify located a problem at) has Verify's words in `verify` (findings/graph_verify.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# How a node fared at one backend.
Status = Literal["lowered", "rejected", "rewritten", "knock-on", "unknown"]
STATUSES: tuple[str, ...] = ("lowered", "rejected", "rewritten", "knock-on", "unknown")
GroupKind = Literal["module", "call", "block"]
# How a value's dtype is written in a graph (torch's name → MLIR's): `f32[2, 32]`.
DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
          "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
          "bool": "i1", "complex64": "c64", "complex128": "c128"}


@dataclass
class NodeVerdict:
    """One node at one backend: `ok` (None: unknown, the backend failed as a whole without
    naming a line), `why` when it is not plainly lowered, `rewrite` the rewrite it went
    through."""

    ok: bool | None
    status: str = "lowered"
    why: str | None = None
    rewrite: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"ok": self.ok, "status": self.status, "why": self.why}
        if self.rewrite:
            data["rewrite"] = self.rewrite
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeVerdict:
        ok = data.get("ok")
        return cls(ok=ok if isinstance(ok, bool) else None,
                   status=str(data.get("status") or ("lowered" if ok else "unknown")),
                   why=_str_or_none(data.get("why")), rewrite=_str_or_none(data.get("rewrite")))


@dataclass
class SourceLine:
    """A line of a file."""

    file: str
    line: int


@dataclass
class GraphNode:
    """One op (or input, output, block call) of the module's graph."""

    id: str
    op: str  # "aten.mm", "input", "output", "block"
    name: str  # the exported program's name for it ("mm_1", "x")
    group: str | None = None  # the innermost group holding it
    file: str | None = None
    line: int | None = None
    library_line: SourceLine | None = None
    ir_lines: list[int] = field(default_factory=list)
    shape: list[int | str] | None = None  # of its (first) result
    dtype: str | None = None
    targets: dict[str, NodeVerdict] = field(default_factory=dict)
    block: str | None = None  # a block call: the group of the function it calls
    verify: str | None = None  # Verify's error at this node, when Verify has run

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "op": self.op, "name": self.name, "group": self.group,
            "file": self.file, "line": self.line,
            "library_line": asdict(self.library_line) if self.library_line else None,
            "ir_lines": list(self.ir_lines), "shape": self.shape, "dtype": self.dtype,
            "targets": {t: v.to_json() for t, v in self.targets.items()},
        }
        if self.block:
            data["block"] = self.block
        if self.verify:
            data["verify"] = self.verify
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GraphNode:
        lib = data.get("library_line")
        return cls(
            id=str(data["id"]), op=str(data.get("op") or ""), name=str(data.get("name") or ""),
            group=_str_or_none(data.get("group")), file=_str_or_none(data.get("file")),
            line=_int_or_none(data.get("line")),
            library_line=SourceLine(str(lib["file"]), int(lib["line"]))
            if isinstance(lib, dict) else None,
            ir_lines=[int(n) for n in data.get("ir_lines") or []],
            shape=data.get("shape"), dtype=_str_or_none(data.get("dtype")),
            targets={str(t): NodeVerdict.from_json(v)
                     for t, v in (data.get("targets") or {}).items()},
            block=_str_or_none(data.get("block")), verify=_str_or_none(data.get("verify")),
        )


@dataclass
class GraphEdge:
    """A value passed from one node to another, with its type (`f32[2, 32]`)."""

    source: str
    target: str
    type: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "type": self.type}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GraphEdge:
        return cls(str(data["from"]), str(data["to"]), str(data.get("type") or ""))


@dataclass
class GraphGroup:
    """A submodule (`kind` "module"), one Python call's ops ("call") or a repeated block's
    function ("block", shown once: `paths` are the blocks it stands for)."""

    id: str
    name: str  # what the view shows: "attn · Attention", "linear", "Block ×80"
    kind: str = "module"
    parent: str | None = None
    path: str = ""  # the submodule's path in the model ("layers.3.attn")
    cls: str = ""  # its class's name
    line: int | None = None  # a call group: its line
    paths: list[str] = field(default_factory=list)  # a block group: the blocks it stands for

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "kind": self.kind,
                                "parent": self.parent, "path": self.path, "class": self.cls}
        if self.line is not None:
            data["line"] = self.line
        if self.paths:
            data["paths"] = list(self.paths)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GraphGroup:
        return cls(id=str(data["id"]), name=str(data.get("name") or ""),
                   kind=str(data.get("kind") or "module"),
                   parent=_str_or_none(data.get("parent")), path=str(data.get("path") or ""),
                   cls=str(data.get("class") or ""), line=_int_or_none(data.get("line")),
                   paths=[str(p) for p in data.get("paths") or []])


@dataclass
class ModuleGraph:
    """The whole graph of one module: nodes, edges, groups, the Torch IR the nodes' `ir_lines`
    index, and per backend the module's own verdict (`{ok, why}`)."""

    module: str
    file: str
    targets: list[str]
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    groups: list[GraphGroup] = field(default_factory=list)
    ir: str = ""
    verdicts: dict[str, NodeVerdict] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    verify: dict[str, Any] | None = None  # Verify's verdict, when it has run

    def to_json(self) -> dict[str, Any]:
        data = {
            "module": self.module, "file": self.file, "targets": list(self.targets),
            "nodes": [n.to_json() for n in self.nodes],
            "edges": [e.to_json() for e in self.edges],
            "groups": [g.to_json() for g in self.groups],
            "verdicts": {t: v.to_json() for t, v in self.verdicts.items()},
            "ir": self.ir, "stats": dict(self.stats),
        }
        if self.verify is not None:
            data["verify"] = dict(self.verify)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModuleGraph:
        return cls(
            module=str(data.get("module") or ""), file=str(data.get("file") or ""),
            targets=[str(t) for t in data.get("targets") or []],
            nodes=[GraphNode.from_json(n) for n in data.get("nodes") or []],
            edges=[GraphEdge.from_json(e) for e in data.get("edges") or []],
            groups=[GraphGroup.from_json(g) for g in data.get("groups") or []],
            ir=str(data.get("ir") or ""),
            verdicts={str(t): NodeVerdict.from_json(v)
                      for t, v in (data.get("verdicts") or {}).items()},
            stats=dict(data.get("stats") or {}),
            verify=dict(data["verify"]) if isinstance(data.get("verify"), dict) else None,
        )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None

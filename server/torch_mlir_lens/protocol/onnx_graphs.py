"""An ONNX graph as results carry it: its nodes, and where a finding is (a node, not a line).

Data only (no onnx, no torch), like `protocol/results.py`. An ONNX model has no source lines:
its rows are its graph's nodes, in the file's order. Results of an `.onnx` file therefore use
the node's 1-based position as the `line` of their source map and diagnostics (so everything
that reads lines works unchanged: maps, partial IR headers, `--annotate`), and say which node
that is with an `OnnxNode` (`LensDiagnostic.node`) and the graph's node table
(`LowerResult.onnx`). Both are optional in JSON: results of Python files carry neither.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_DOMAIN = "ai.onnx"  # how the empty domain (ONNX's own operators) is shown


@dataclass(frozen=True)
class OnnxNode:
    """One node of an ONNX graph: where a finding is in an `.onnx` file."""

    index: int  # 1-based position in the graph's node list (the `line` of a result)
    name: str  # as the file names it ("" when it has none)
    op_type: str  # "Conv", "FastGelu", ...
    domain: str = ""  # "" for ONNX's own operators, "com.microsoft", ...
    opset: int = 0  # the model's opset version of that domain

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OnnxNode:
        return cls(index=int(data.get("index", 0)), name=str(data.get("name", "")),
                   op_type=str(data.get("op_type", "")), domain=str(data.get("domain", "")),
                   opset=int(data.get("opset", 0)))

    def label(self) -> str:
        """`node 12 "conv1" (Conv, opset 9)`, `node 3 (com.microsoft.FastGelu, opset 1)`."""
        named = f' "{self.name}"' if self.name else ""
        op = self.op_type if not self.domain or self.domain == DEFAULT_DOMAIN \
            else f"{self.domain}.{self.op_type}"
        return f"node {self.index}{named} ({op}, opset {self.opset})"


@dataclass
class OnnxValue:
    """A graph input or output: its name, element type and dims (a dim is a size or the
    name of a dynamic dim, `dim_param`; "?" when it has neither)."""

    name: str
    dtype: str
    dims: list[int | str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OnnxValue:
        return cls(name=str(data.get("name", "")), dtype=str(data.get("dtype", "")),
                   dims=[d if isinstance(d, int | str) else "?" for d in data.get("dims", [])])


@dataclass
class OnnxGraph:
    """What an `.onnx` file holds, for a view of it: its graph, opsets, values and nodes."""

    graph: str
    opsets: dict[str, int] = field(default_factory=dict)  # domain ("" included) → version
    inputs: list[OnnxValue] = field(default_factory=list)
    outputs: list[OnnxValue] = field(default_factory=list)
    nodes: list[OnnxNode] = field(default_factory=list)
    # The ways past (worker/onnx/fixes.py) this lowering went through, by name.
    fixes: list[str] = field(default_factory=list)

    def node(self, index: int | None) -> OnnxNode | None:
        """The node at a result's `line` (1-based), if there is one."""
        if index is None or not 1 <= index <= len(self.nodes):
            return None
        return self.nodes[index - 1]

    def to_json(self) -> dict[str, Any]:
        return {"graph": self.graph, "opsets": dict(self.opsets),
                "inputs": [v.to_json() for v in self.inputs],
                "outputs": [v.to_json() for v in self.outputs],
                "nodes": [n.to_json() for n in self.nodes], "fixes": list(self.fixes)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OnnxGraph:
        return cls(graph=str(data.get("graph", "")),
                   opsets={str(k): int(v) for k, v in (data.get("opsets") or {}).items()},
                   inputs=[OnnxValue.from_json(v) for v in data.get("inputs") or []],
                   outputs=[OnnxValue.from_json(v) for v in data.get("outputs") or []],
                   nodes=[OnnxNode.from_json(n) for n in data.get("nodes") or []],
                   fixes=[str(f) for f in data.get("fixes") or []])

"""Node identity through the importer and every pipeline: each op located at its ONNX node.

torch-mlir's ONNX importer gives each op `loc("<node name>")`: a name many models leave empty
or repeat (every node of the `light/` models is named ""), so an error names nothing. Here
every node gets a key that is unique in its graph before the import (its own name when that
is unique), and after it each op's location becomes `loc("<key>"("<model path>":N:0))`, N
the node's 1-based position (`protocol/onnx_graphs.py`): a file location, so the product's
source maps, culprit listing and partial lowering, built for `file:line` locations, place
everything at its node unchanged, and the pipelines carry it to every backend's ops. A node
inside a subgraph (an `If`'s branches, a `Loop`'s body) is located at the node that owns it.
"""

from __future__ import annotations

from typing import Any

import onnx
from torch_mlir import ir

from torch_mlir_lens.protocol.onnx_graphs import OnnxGraph, OnnxNode, OnnxValue
from torch_mlir_lens.worker.onnx.model_file import opsets_of


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    out: list[onnx.GraphProto] = []
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            out.append(attr.g)
        elif attr.type == onnx.AttributeProto.GRAPHS:
            out.extend(attr.graphs)
    return out


def _all_names(graph: onnx.GraphProto, names: set[str]) -> None:
    names.update(i.name for i in graph.input)
    names.update(i.name for i in graph.initializer)
    for node in graph.node:
        names.update(node.output)
        for sub in _subgraphs(node):
            _all_names(sub, names)


class NodeKeys:
    """The nodes of a model and the location key each was given (`assign`)."""

    def __init__(self) -> None:
        self.nodes: list[OnnxNode] = []  # top-level nodes, in order
        self.owner: dict[str, int] = {}  # location name → 1-based top-level node index

    @classmethod
    def assign(cls, model: onnx.ModelProto) -> NodeKeys:
        """Give every node of `model` (changed in place: pass a copy) a unique name, and
        record which top-level node each name, and each Constant node's output, stands for."""
        keys = cls()
        opsets = opsets_of(model)
        values: set[str] = set()
        _all_names(model.graph, values)
        taken: set[str] = set()
        counts: dict[str, int] = {}
        _count_names(model.graph, counts)
        for index, node in enumerate(model.graph.node, start=1):
            domain = "" if node.domain == "ai.onnx" else node.domain
            keys.nodes.append(OnnxNode(index, node.name, node.op_type, domain,
                                       opsets.get(domain, 0)))
            keys._key(node, index, index, counts, values, taken)
        return keys

    def _key(self, node: onnx.NodeProto, index: int, owner: int, counts: dict[str, int],
             values: set[str], taken: set[str]) -> None:
        name = node.name
        if not name or counts.get(name, 0) > 1 or name in values or name in taken:
            base = f"{node.op_type}_{index}"
            name, n = base, 1
            while name in values or name in taken or counts.get(name, 0):
                n += 1
                name = f"{base}_{n}"
        node.name = name
        taken.add(name)
        self.owner[name] = owner
        if node.op_type == "Constant" and len(node.output) == 1:
            # The importer makes a Constant node an initializer located by its output's name.
            self.owner.setdefault(node.output[0], owner)
        for sub_index, sub in enumerate(_subgraphs(node)):
            for inner_index, inner in enumerate(sub.node):
                self._key(inner, index * 1000 + sub_index * 100 + inner_index, owner, counts,
                          values, taken)

    def stamp(self, module_op: Any, path: str) -> None:
        """Each op of the imported module located at its node (module docstring)."""
        ctx = module_op.context
        cache: dict[str, Any] = {}

        def visit(op: Any) -> ir.WalkResult:
            text = str(op.location)
            located = cache.get(text)
            if located is None and text.startswith('loc("') and text.endswith('")'):
                key = text[5:-2]
                owner = self.owner.get(key)
                if owner is not None:
                    located = cache[text] = ir.Location.name(
                        key, childLoc=ir.Location.file(path, owner, 0, context=ctx),
                        context=ctx)
            if located is not None:
                op.location = located
            return ir.WalkResult.ADVANCE

        module_op.operation.walk(visit)


def _count_names(graph: onnx.GraphProto, counts: dict[str, int]) -> None:
    for node in graph.node:
        if node.name:
            counts[node.name] = counts.get(node.name, 0) + 1
        for sub in _subgraphs(node):
            _count_names(sub, counts)


_DTYPES = {v: k.lower() for k, v in onnx.TensorProto.DataType.items()}


def value_of(info: onnx.ValueInfoProto) -> OnnxValue:
    """A graph input or output as results carry it."""
    tensor = info.type.tensor_type
    dims: list[int | str] = []
    for d in tensor.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?"))
    dtype = _DTYPES.get(tensor.elem_type, "?") if info.type.HasField("tensor_type") else \
        (info.type.WhichOneof("value") or "?")
    return OnnxValue(info.name, dtype, dims)


def graph_of(model: onnx.ModelProto, nodes: list[OnnxNode]) -> OnnxGraph:
    """The graph's summary (its inputs leave out those with an initializer: weights)."""
    weights = {t.name for t in model.graph.initializer}
    return OnnxGraph(
        graph=model.graph.name, opsets=opsets_of(model),
        inputs=[value_of(i) for i in model.graph.input if i.name not in weights],
        outputs=[value_of(o) for o in model.graph.output], nodes=list(nodes))

"""An ONNX model as the graph view draws a module: its nodes with their verdicts per backend,
the values between them, and its names' hierarchy as groups (protocol/graph.py).

The same `ModuleGraph` as a PyTorch module's, so the editor's graph view, `torch-mlir-lens graph
model.onnx` and its HTML page draw a model as they draw a module. Built from what the model's
lowering already has, torch-free:

- the nodes and their verdicts: `onnx_verdicts.rows` (the same states as the model view and
  Problems); a node sits at its "line", its 1-based position, as every result of a model does;
- the edges: the imported IR (`raw`), one `torch.operator "onnx.*"` per node, its operands
  naming the values other nodes (or the graph's inputs) made; the weights (initializers,
  imported as constants of no node) are not drawn;
- the groups: the path in a node's name (`/encoder/layer.0/attn/MatMul`, as torch.onnx.export
  and most converters name nodes), one group per folder of it;
- each node's IR lines: the Torch IR's lines its conversion made (`torch_ir`'s map).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from torch_mlir_lens.findings import onnx_verdicts
from torch_mlir_lens.protocol.graph import (
    GraphEdge,
    GraphGroup,
    GraphNode,
    ModuleGraph,
    NodeVerdict,
)
from torch_mlir_lens.protocol.onnx_graphs import DEFAULT_DOMAIN, OnnxGraph
from torch_mlir_lens.protocol.results import LowerResult

_OPERATOR = re.compile(r'^\s*(?:(%[\w.]+)(?::(\d+))?\s*=\s*)?torch\.operator\s+"onnx\.[\w.]+"\(')
_VALUE = re.compile(r"%[\w.]+(?:#\d+)?")
_RETURN = re.compile(r"^\s*(?:func\.)?return\s+(.*?)\s*:")
_TYPE = re.compile(r"^(\w+)\[(.*)\]$")
# ONNX's element type names (the model's inputs) as the graph writes dtypes.
_ONNX_DTYPES = {"float": "f32", "double": "f64", "float16": "f16", "bfloat16": "bf16",
                "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
                "bool": "i1", "complex64": "c64", "complex128": "c128"}
_STATUS = {onnx_verdicts.OK: "lowered", onnx_verdicts.REJECTED: "rejected",
           onnx_verdicts.KNOCK_ON: "knock-on", onnx_verdicts.UNKNOWN: "unknown"}


def model_graph(path: str, graph: OnnxGraph, results: Mapping[str, LowerResult],
                backends: Sequence[str], *, raw: LowerResult | None,
                torch_ir: LowerResult | None) -> ModuleGraph:
    """The model's graph with each node's verdict at each of `backends` whose result is in
    `results` (module docstring)."""
    rows = onnx_verdicts.rows(graph, results, path, backends, raw=raw)
    out = ModuleGraph(module=graph.graph, file=path,
                      targets=[t for t in backends if t in results],
                      ir=torch_ir.ir if torch_ir is not None else "")
    groups: dict[str, GraphGroup] = {}
    ir_lines = _ir_lines(torch_ir, path)
    for row in rows:
        node = row.node
        shape, dtype = _shape(row.outputs[0] if row.outputs else "")
        out.nodes.append(GraphNode(
            id=f"n{node.index}", op=_op(node.op_type, node.domain),
            name=node.name or f"#{node.index}", group=_group(node.name, groups), file=path,
            line=node.index, ir_lines=ir_lines.get(node.index, []), shape=shape, dtype=dtype,
            targets={v.target: NodeVerdict(ok=None if v.state == onnx_verdicts.UNKNOWN
                                           else v.state == onnx_verdicts.OK,
                                           status=_STATUS[v.state], why=v.why)
                     for v in row.verdicts}))
    out.groups = list(groups.values())
    inputs = []
    passed = {t: NodeVerdict(ok=True) for t in out.targets}  # as a module's inputs and output
    for value in graph.inputs:
        dtype = _ONNX_DTYPES.get(value.dtype, value.dtype)
        out.nodes.append(GraphNode(id=f"in:{value.name}", op="input", name=value.name,
                                   shape=list(value.dims), dtype=dtype, targets=dict(passed)))
        inputs.append((value.name, f"{dtype}[{', '.join(str(d) for d in value.dims)}]"))
    out.nodes.append(GraphNode(id="out", op="output", name="output", targets=dict(passed)))
    out.edges = _edges(raw, path, inputs)
    for summary in onnx_verdicts.summaries(results, path, backends):
        out.verdicts[summary.target] = NodeVerdict(
            ok=summary.ok, status="lowered" if summary.ok else "rejected",
            why=summary.message or (f"{summary.rejected} node(s) rejected"
                                    if summary.rejected else None))
    out.stats = {"nodes": len(out.nodes), "edges": len(out.edges), "groups": len(out.groups),
                 "blocks": 0, "stitched": False, "onnx": True}
    return out


def _op(op_type: str, domain: str) -> str:
    """`Conv`, `com.microsoft.FastGelu`: as the model view and findings name a node's op."""
    return op_type if not domain or domain == DEFAULT_DOMAIN else f"{domain}.{op_type}"


def _shape(shown: str) -> tuple[list[int | str] | None, str | None]:
    """`f32[4,?]` (onnx_verdicts' way of showing a type) → ([4, "?"], "f32")."""
    found = _TYPE.match(shown)
    if found is None:
        return None, shown or None
    dims = [d.strip() for d in found.group(2).split(",") if d.strip()]
    return [int(d) if d.lstrip("-").isdigit() else d for d in dims], found.group(1)


def _group(name: str, groups: dict[str, GraphGroup]) -> str | None:
    """The group of a node named `/encoder/layer.0/attn/MatMul` (made with its parents on
    first use), or None for a name without a path."""
    parts = [p for p in name.split("/") if p][:-1] if "/" in name else []
    parent: str | None = None
    for depth in range(len(parts)):
        gid = "g:/" + "/".join(parts[:depth + 1])
        if gid not in groups:
            groups[gid] = GraphGroup(id=gid, name=parts[depth], kind="module", parent=parent,
                                     path=".".join(parts[:depth + 1]))
        parent = gid
    return parent


def _ir_lines(torch_ir: LowerResult | None, path: str) -> dict[int, list[int]]:
    """Node index → the Torch IR lines its conversion made."""
    lines: dict[int, set[int]] = {}
    for m in torch_ir.map if torch_ir is not None else []:
        if m.depth == 0 and m.file == path:
            lines.setdefault(m.line, set()).add(m.ir_line)
    return {index: sorted(found) for index, found in lines.items()}


def _edges(raw: LowerResult | None, path: str,
           inputs: list[tuple[str, str]]) -> list[GraphEdge]:
    """Who feeds whom, read from the imported IR: each node's operands are values a node
    made (`%3`, `%5#1`) or the graph's inputs (`%arg0`); the values `return` gives back go to
    the output."""
    if raw is None:
        return []
    ir = raw.ir.splitlines()
    node_at = {m.ir_line: m.line for m in raw.map if m.file == path and m.depth == 0}
    made: dict[str, tuple[str, str]] = {f"%arg{i}": (f"in:{name}", shown)
                                        for i, (name, shown) in enumerate(inputs)}
    edges: list[GraphEdge] = []
    for ir_line, text in enumerate(ir, start=1):
        returned = _RETURN.match(text)
        if returned:
            edges += [GraphEdge(made[v][0], "out", made[v][1])
                      for v in _VALUE.findall(returned.group(1)) if v in made]
            continue
        op = _OPERATOR.match(text)
        index = node_at.get(ir_line)
        if op is None or index is None:
            continue
        target = f"n{index}"
        operands = _operands(text, op.end())
        for value in dict.fromkeys(_VALUE.findall(operands)):
            if value in made and made[value][0] != target:
                edges.append(GraphEdge(made[value][0], target, made[value][1]))
        result, count = op.group(1), op.group(2)
        results = _result_types(text)
        if result is None:
            continue
        names = [f"{result}#{i}" for i in range(int(count))] if count else [result]
        for i, name in enumerate(names):
            made[name] = (target, results[i] if i < len(results) else "")
    return edges


def _operands(text: str, start: int) -> str:
    """The operand list of an op line whose `(` ends at `start`."""
    depth = 1
    for i in range(start, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return text[start:i]
    return text[start:]


def _result_types(text: str) -> list[str]:
    """The result types of an op line, shown as the graph's edges show them (`f32[4,5]`)."""
    shown = onnx_verdicts.signature_types(text)
    return [_spaced(t) for t in shown[1]] if shown is not None else []


def _spaced(shown: str) -> str:
    """`f32[4,5]` → `f32[4, 5]`, as the edges of a module's graph are written."""
    return re.sub(r",(?=\S)", ", ", shown)


__all__ = ["model_graph"]

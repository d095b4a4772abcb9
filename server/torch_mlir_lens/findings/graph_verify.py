"""Verify's words on a module's graph: its verdict on the graph, and on the nodes of the line it
located each problem at, the problem.

On a mismatch Verify names the first user line whose compiled values differ from eager
(`VerifyResult.divergence`): each op of that line says so, and the op whose value was the one
compared (the line's last of that shape and dtype: what Verify pairs) says it was its value.
Other problems Verify located (a lowering error at a line) mark that line's ops the same way;
a mismatch it could not locate marks the outputs. The graph view and `torch-mlir-lens graph
--verify` draw them (protocol/graph.py: `ModuleGraph.verify`, `GraphNode.verify`).

Torch-free.
"""

from __future__ import annotations

from torch_mlir_lens.protocol.graph import DTYPES, GraphNode, ModuleGraph
from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.protocol.verify_results import Divergence, VerifyResult
from torch_mlir_lens.rules.node_verdicts import nodes_named_by

COMPARED = " (this op's value was the one compared)"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _compared(nodes: list[GraphNode], divergence: Divergence) -> GraphNode | None:
    """The op whose value Verify compared: the line's last of the diverging shape and dtype."""
    dtype = DTYPES.get(divergence.dtype, divergence.dtype)
    same = [n for n in nodes if n.shape == divergence.shape and n.dtype == dtype]
    return same[-1] if same else None


def mark_verify(graph: ModuleGraph, result: VerifyResult) -> list[GraphNode]:
    """Set the graph's Verify verdict and each located problem on its line's nodes; the nodes
    marked, in the graph's order."""
    divergence = result.divergence
    graph.verify = {"ok": result.ok,
                    "message": _first_line(result.message) or ("✓ matches eager" if result.ok
                                                               else "✗ verify failed"),
                    "line": divergence.line if divergence is not None else None}
    if result.ok:
        return []
    marked: dict[str, str] = {}
    if divergence is not None:
        at = nodes_named_by(graph.nodes, divergence.file, divergence.line, [])
        compared = _compared(at, divergence)
        for node in at:
            marked[node.id] = f"✗ {divergence.message}{COMPARED if node is compared else ''}"
    for diag in result.diagnostics:
        if diag.line is None or (divergence is not None and diag.line == divergence.line):
            continue  # the divergence, said above; or nowhere to put it
        for node in nodes_named_by(graph.nodes, diag.file, diag.line,
                                   [diag.op] if diag.op else []):
            marked.setdefault(node.id, f"✗ {_first_line(diag.message)}")
    if not marked and result.kind == ErrorKind.VERIFY_MISMATCH:  # not located: the outputs
        for node in graph.nodes:
            if node.op == "output":
                marked[node.id] = graph.verify["message"]
    for node in graph.nodes:
        if node.id in marked:
            node.verify = marked[node.id]
    return [n for n in graph.nodes if n.id in marked]

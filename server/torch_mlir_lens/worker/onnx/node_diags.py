"""The ops a backend rejects, as one diagnostic per ONNX node (rules/onnx_nodes.py words it).

Culprits come from the product's listing (worker/culprits/: the partial lowering's rounds,
the leftovers, ops tried alone) with their locations, which name their node
(`nodes.py`): ops of one node are one cause. Errors that name no op (a verifier's) are kept
at their node, or on the graph when they have none.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch_mlir_lens.protocol.onnx_graphs import OnnxNode
from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, Severity
from torch_mlir_lens.rules import onnx_nodes
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.worker.ir.locations import LocationResolver
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag


@dataclass
class Rejected:
    """An op a backend (or torch-mlir's ONNX conversion) leaves: its name, location, words."""

    name: str  # "torch.aten.argmax", or "onnx.FastGelu" for a node left unconverted
    location: str
    message: str = ""


class NodeWords:
    """Locations → nodes, and the diagnostics of one model's nodes."""

    def __init__(self, path: str, nodes: list[OnnxNode]) -> None:
        self.path = path
        self.nodes = nodes
        self.resolver = LocationResolver([path])

    def node_at(self, location: str) -> OnnxNode | None:
        """The node a location names (its first frame in the model's file)."""
        frames = self.resolver.user_frames(location)
        if not frames:
            return None
        index = frames[0][1]
        return self.nodes[index - 1] if 1 <= index <= len(self.nodes) else None

    def diagnostic(self, node: OnnxNode | None, target: str, message: str, *,
                   kind: str = ErrorKind.UNSUPPORTED_OP, op: str | None = None,
                   ops: list[str] | None = None, reason: str | None = None) -> LensDiagnostic:
        """One finding at `node` (on the graph when None)."""
        return LensDiagnostic(
            severity=Severity.ERROR, message=message, kind=kind, file=self.path,
            line=node.index if node else None, op=op, target=target,
            cause=onnx_nodes.cause(node) if node and kind == ErrorKind.UNSUPPORTED_OP else None,
            ops=ops, reason=reason, node=node)

    def culprits(self, rejected: list[Rejected], target: str) -> list[LensDiagnostic]:
        """One unsupported-op diagnostic per node, in node order; ops without a node go on
        the graph, one per op."""
        by_node: dict[int, list[Rejected]] = {}
        loose: list[Rejected] = []
        for r in rejected:
            node = self.node_at(r.location)
            (by_node.setdefault(node.index, []) if node else loose).append(r)
        out = []
        for index in sorted(by_node):
            node, group = self.nodes[index - 1], by_node[index]
            ops = list(dict.fromkeys(r.name for r in group))
            unconverted = [r for r in group if r.name.startswith("onnx.")]
            if unconverted:
                reason = onnx_nodes.no_conversion(node)
            else:
                reason = onnx_nodes.backend_reason(
                    ops, next((r.message for r in group if r.message), ""), target)
            out.append(self.diagnostic(node, target,
                                       onnx_nodes.culprit_message(node, target, reason),
                                       op=ops[0], ops=ops, reason=reason))
        for r in loose:
            out.append(self.diagnostic(
                None, target, f"`{r.name}` cannot be lowered to {target_title(target)}"
                + (f" ({r.message.splitlines()[0]})" if r.message else ""), op=r.name))
        return out

    def note_knock_ons(self, diags: list[LensDiagnostic], knock_on: list[Rejected]) -> None:
        """Nodes that fail only because a culprit's result has no type they can take, noted
        on the first culprit (`knock_on`, as a Python culprit's size checks are)."""
        culprits = [d for d in diags if d.kind == ErrorKind.UNSUPPORTED_OP]
        if not culprits or not knock_on:
            return
        notes = []
        for r in knock_on:
            node = self.node_at(r.location)
            notes.append({"op": r.name, "file": self.path,
                          "line": node.index if node else None})
        culprits[0].knock_on = (culprits[0].knock_on or []) + notes

    def errors(self, errors: list[Diag], target: str) -> list[LensDiagnostic]:
        """Pipeline errors as lowering errors at their node (the graph when none)."""
        out = []
        for d in errors:
            node = self.node_at(d.location) or next(
                (n for n in map(self.node_at, (x.location for x in d.notes)) if n), None)
            first = (d.message.splitlines() or [""])[0].split(": %", 1)[0].strip()
            where = f"{node.label()}: " if node else ""
            out.append(self.diagnostic(node, target,
                                       f"{target_title(target)}: {where}{first}",
                                       kind=ErrorKind.LOWERING_ERROR))
        return out

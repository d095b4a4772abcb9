"""An ONNX model node by node: each node with the types of its values and its verdict per
backend, from the same results (and diagnostics) the Problems panel and `check` show.

A result of an `.onnx` file locates everything at nodes (`line` = the node's 1-based position,
protocol/onnx_graphs.py). Per backend a node is `rejected` when an error of that backend is at
it (why: the backend's reason, else its message's first line), `knock-on` when it fails only
because of a rejected node (worded as the Problems panel words it), `unknown` when the
lowering failed as a whole with no node to blame, else `ok`. The values' types come from the
imported IR (`raw`: one `torch.operator "onnx.*"` per node, its operand and result types),
shown as `f32[2,3]`, `f32[?,4]`, `none`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from torch_mlir_lens.findings.wording import knock_on_message
from torch_mlir_lens.protocol.onnx_graphs import OnnxGraph, OnnxNode
from torch_mlir_lens.protocol.results import LensDiagnostic, LowerResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.verdict import backend_verdict

OK, REJECTED, KNOCK_ON, UNKNOWN = "ok", "rejected", "knock-on", "unknown"
_TENSOR = re.compile(r"^!torch\.vtensor<\[([^\]]*)\],\s*([^>]+)>$")


@dataclass(frozen=True)
class NodeVerdict:
    """How one backend fares with one node."""

    target: str
    state: str  # OK, REJECTED, KNOCK_ON or UNKNOWN
    why: str | None = None


@dataclass
class NodeRow:
    """One node, its values' types (operands, results) and its verdict per backend."""

    node: OnnxNode
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    verdicts: list[NodeVerdict] = field(default_factory=list)


@dataclass(frozen=True)
class TargetSummary:
    """One backend on the whole model."""

    target: str
    ok: bool
    partial: bool
    rejected: int  # nodes it rejects
    message: str | None  # why it failed, when no node is to blame


def _at_model(diag: LensDiagnostic, path: str) -> bool:
    return diag.file is None or os.path.normpath(diag.file) == os.path.normpath(path)


def node_states(result: LowerResult, path: str) -> tuple[dict[int, NodeVerdict], str | None]:
    """The nodes of the model at `path` that `result`'s backend rejects or fails only because
    of one (by node index), and, when it failed with no node to blame, why (else None)."""
    target = result.target
    states: dict[int, NodeVerdict] = {}
    for diag in result.diagnostics:
        if diag.severity != "error" or diag.line is None or not _at_model(diag, path):
            continue
        why = diag.reason or diag.message.splitlines()[0]
        states.setdefault(diag.line, NodeVerdict(target, REJECTED, why))
    for diag in culprits.culprit_diagnostics(result.diagnostics):
        cause = culprits.cause_of(diag)
        for k in diag.knock_on or []:
            line = k.get("line")
            if isinstance(line, int) and line not in states:
                states[line] = NodeVerdict(target, KNOCK_ON, knock_on_message(
                    culprits.short_op(k.get("op")), cause))
    verdict = backend_verdict(result)
    failed = None
    if not result.ok and not result.partial and not states:
        failed = verdict.error.message.splitlines()[0] if verdict.error else \
            f"does not lower to {target}"
    return states, failed


def rows(graph: OnnxGraph, results: Mapping[str, LowerResult], path: str,
         backends: Sequence[str], raw: LowerResult | None = None) -> list[NodeRow]:
    """Every node of `graph`, in the file's order, with its verdict at each of `backends`
    whose result is known, and its values' types from the imported IR (`raw`)."""
    per_target = {t: node_states(results[t], path) for t in backends if t in results}
    types = value_types(raw, path) if raw is not None else {}
    out = []
    for node in graph.nodes:
        verdicts = []
        for target, (states, failed) in per_target.items():
            if node.index in states:
                verdicts.append(states[node.index])
            elif failed is not None:
                verdicts.append(NodeVerdict(target, UNKNOWN, failed))
            else:
                verdicts.append(NodeVerdict(target, OK))
        inputs, outputs = types.get(node.index, ([], []))
        out.append(NodeRow(node, inputs, outputs, verdicts))
    return out


def summaries(results: Mapping[str, LowerResult], path: str,
              backends: Sequence[str]) -> list[TargetSummary]:
    """Each of `backends` whose result is known, on the whole model."""
    out = []
    for target in backends:
        result = results.get(target)
        if result is None:
            continue
        states, failed = node_states(result, path)
        rejected = sum(1 for v in states.values() if v.state == REJECTED)
        out.append(TargetSummary(target, backend_verdict(result).ok, result.partial, rejected,
                                 failed))
    return out


def value_types(raw: LowerResult, path: str) -> dict[int, tuple[list[str], list[str]]]:
    """Node index → (operand types, result types), read from the imported IR's op of each
    node (`%1 = torch.operator "onnx.Relu"(%0) : (!torch.vtensor<[2,3],f32>) -> ...`)."""
    ir = raw.ir.splitlines()
    out: dict[int, tuple[list[str], list[str]]] = {}
    for m in sorted(raw.map, key=lambda m: m.ir_line):
        if m.line in out or not 0 < m.ir_line <= len(ir) or \
                os.path.normpath(m.file) != os.path.normpath(path):
            continue
        text = ir[m.ir_line - 1]
        if "torch.operator" not in text:
            continue
        signature = signature_types(text)
        if signature is not None:
            out[m.line] = signature
    return out


def signature_types(text: str) -> tuple[list[str], list[str]] | None:
    """The operand and result types of one op line, shown (`f32[2,3]`); None without any."""
    at = text.rfind(" : (")
    if at < 0:
        return None
    operands, arrow, results = text[at + 3:].rstrip(" {").partition(") -> ")
    if not arrow:
        return None
    results = results.strip()
    if results.startswith("(") and results.endswith(")"):
        results = results[1:-1]
    return ([_shown(t) for t in _split(operands[1:])], [_shown(t) for t in _split(results)])


def _split(types: str) -> list[str]:
    """Comma-separated types at the top level (a tensor type holds commas of its own)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(types):
        depth += ch in "<[({"
        depth -= ch in ">])}"
        if ch == "," and depth == 0:
            parts.append(types[start:i])
            start = i + 1
    parts.append(types[start:])
    return [p.strip() for p in parts if p.strip()]


def _shown(mlir_type: str) -> str:
    """`!torch.vtensor<[2,3],f32>` → `f32[2,3]`; `!torch.none` → `none`."""
    found = _TENSOR.match(mlir_type)
    if found:
        return f"{found.group(2).strip()}[{found.group(1)}]"
    return mlir_type.removeprefix("!torch.")

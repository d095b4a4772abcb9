"""How a finding about an ONNX node is worded, everywhere (no onnx, no torch).

A culprit of an `.onnx` file names its node as a Python culprit names its call: the node's
operator and name (its `cause`), at the node (`rules/culprits.located`: "node 12"), with why
the backend refuses it. The ways past that belong to ONNX (worker/onnx/fixes.py) are named
here too, for `--rewrites` and the messages that offer them.
"""

from __future__ import annotations

from torch_mlir_lens.protocol.onnx_graphs import DEFAULT_DOMAIN, OnnxNode
from torch_mlir_lens.rules.culprits import short_op
from torch_mlir_lens.rules.targets import target_title

# The ways past an ONNX model's rejected nodes, in the order `auto` tries them.
OPSET_FIX = "opset"  # the model converted to a newer opset (onnx.version_converter)
SHAPES_FIX = "shapes"  # dynamic dims pinned to their sizes, shapes inferred again
FOLD_FIX = "fold"  # shape subgraphs (computed from constants and static shapes) folded
FIXES = (OPSET_FIX, SHAPES_FIX, FOLD_FIX)
FIX_TITLES = {
    OPSET_FIX: "the model upgraded to opset {opset} (onnx.version_converter)",
    SHAPES_FIX: "dynamic dims pinned to {dims} and shapes inferred again",
    FOLD_FIX: "{count} shape-computing nodes folded into constants",
}


def operator(node: OnnxNode) -> str:
    """`Conv`, or `com.microsoft.FastGelu` outside ONNX's own domain."""
    if not node.domain or node.domain == DEFAULT_DOMAIN:
        return node.op_type
    return f"{node.domain}.{node.op_type}"


def cause(node: OnnxNode) -> str:
    """The culprit as people read it: "`Conv` node "conv1" (opset 9)"."""
    named = f' "{node.name}"' if node.name else ""
    return f"`{operator(node)}` node{named} (opset {node.opset})"


def no_conversion(node: OnnxNode) -> str:
    """Why torch-mlir stops at a node its ONNX conversion leaves as it is."""
    return (f"torch-mlir has no conversion of `{operator(node)}` at opset {node.opset} (with "
            "these attributes and types)")


def backend_reason(ops: list[str], message: str, target: str) -> str:
    """Why a backend refuses the ops a node became: its own words when it gave any."""
    names = ", ".join(f"`{short_op(op)}`" for op in dict.fromkeys(ops))
    made = f"it becomes {names}, which {target_title(target)} cannot lower"
    detail = message.splitlines()[0].strip() if message else ""
    if detail and "failed to legalize operation" not in detail:
        return f"{made} ({detail})"
    return made


def culprit_message(node: OnnxNode, target: str, reason: str) -> str:
    """The diagnostic's message: the node, the backend, why."""
    return f"{cause(node)} cannot be lowered to {target_title(target)}: {reason}"


def fix_offer(name: str, detail: str, error: float | None) -> str:
    """"a proven way past it: ...": what a fix's proof offers, for a message."""
    err = "" if error is None else f", max error {error:.2g} against onnxruntime"
    return f"a proven way past it: --rewrites {name} ({detail}{err})"

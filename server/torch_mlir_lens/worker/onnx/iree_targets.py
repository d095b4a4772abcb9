"""An ONNX model at the IREE targets: its Linalg IR compiled by IREE (worker/iree/), as a
PyTorch module's is, with every finding at its node.

    lower_iree(lowerer, target, arch=..., options=...) → LowerResult

IREE compiles the Linalg module the model's lowerer makes: a model torch-mlir does not take to
Linalg reports those culprits under the IREE target's name, and IREE's own errors land on the
nodes their locations name (node N is line N of the model's file, `nodes.py`). The model has
no eager module to time against: no profile.
"""

from __future__ import annotations

from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.worker.iree.lowering import lower_target
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.onnx.lowerer import OnnxLowerer


def lower_iree(lowerer: OnnxLowerer, target: str, *, arch: str | None,
               options: LowerOptions) -> LowerResult:
    """The IREE target's result for the model (a failure is a result, as for every target)."""
    result = lower_target(lowerer, target, arch=arch, weightless=False, options=options)
    graph = lowerer.graph() if result.onnx is None else result.onnx
    for diag in result.diagnostics:
        if diag.node is None and diag.file == lowerer.path and diag.line:
            diag.node = graph.node(diag.line)
            # IREE's errors are worded for lines (worker/iree/compile_errors.py).
            diag.message = diag.message.replace(" cannot compile this line:",
                                                " cannot compile this node:", 1)
    result.onnx = graph
    return result


__all__ = ["lower_iree"]

"""Every node a backend rejects, and the partial IR of the rest, for an imported ONNX model.

The product's own listing (worker/culprits/: partial lowering, leftovers, ops tried alone)
works on any Torch module whose ops are located; here it runs on the model's, and its
culprits are worded by node (node_diags.py). Two levels, as for a PyTorch module:

- torch-mlir's ONNX conversion leaves a node it has no conversion for (`onnx.FastGelu`,
  `BatchNormalization` of opset 9) as a `torch.operator`: every backend fails on it. Those
  nodes are outlined as calls, the Torch pipeline runs on the rest, and each backend lowers
  that partially, its own rejects added;
- a backend rejecting ops of a converted module: its partial lowering, else its listing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.results import LensDiagnostic
from torch_mlir_lens.rules import targets
from torch_mlir_lens.rules.targets import ONNX_TORCH_PIPELINE
from torch_mlir_lens.worker.culprits import illegal_ops, partial
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag
from torch_mlir_lens.worker.onnx.conversion import Conversion
from torch_mlir_lens.worker.onnx.node_diags import NodeWords, Rejected
from torch_mlir_lens.worker.stages.pipeline import PassFailure, run_pipeline


@dataclass
class Shown:
    """What a failed target shows: the furthest IR (None: the caller's), the calls in it
    standing for rejected ops (None: no partial IR), and one diagnostic per cause."""

    module: Any = None
    symbols: set[str] | None = None
    diagnostics: list[LensDiagnostic] = field(default_factory=list)


def _from_partial(part: partial.Partial) -> list[Rejected]:
    return [Rejected(c.name, c.location, c.message) for c in part.culprits if not c.folded]


def _listed(module: Any, target: str, words: NodeWords) -> list[Rejected]:
    found, _complete = illegal_ops.find_unsupported(module, target, words.resolver)
    return [Rejected(f.name, f.location, f.message) for f in found if not f.lowers_alone]


def backend_failure(torch_module: Any, target: str, errors: list[Diag],
                    words: NodeWords) -> Shown:
    """A backend that fails on a converted module: its partial IR and culprits by node."""
    if target not in targets.BACKEND_PIPELINES:  # a custom pipeline: its own errors
        return Shown(diagnostics=words.errors(errors, target))
    try:
        part = partial.lower_partially(torch_module, target, resolver=words.resolver)
    except Exception:  # best effort: the listing below stands without it
        part = None
    if part is not None:
        diags = words.culprits(_from_partial(part), target)
        return Shown(part.module, {c.symbol for c in part.culprits if c.symbol}, diags)
    try:
        rejected = _listed(torch_module, target, words)
    except Exception:
        rejected = []
    diags = words.culprits(rejected, target)
    return Shown(diagnostics=diags or words.errors(errors, target))


def torch_failure(conversion: Conversion, target: str, words: NodeWords) -> Shown:
    """Nodes torch-mlir does not convert: each a culprit on every target (its knock-ons
    noted on it); the rest lowered with them as calls (the Torch IR, or the backend's partial
    IR with its own rejects added)."""
    diags = words.culprits(conversion.rejected, target)
    words.note_knock_ons(diags, conversion.knock_on)
    if conversion.module is None:
        return Shown(None, None, diags or words.errors(conversion.errors, target))
    module = conversion.module.clone()
    try:
        run_pipeline(module, ONNX_TORCH_PIPELINE)
    except PassFailure:
        return Shown(conversion.module, set(conversion.symbols), diags)
    symbols = set(conversion.symbols)
    if target not in targets.BACKEND_PIPELINES:
        return Shown(module, symbols, diags)
    try:
        part = partial.lower_partially(module, target, outlined_already=True,
                                       resolver=words.resolver)
    except Exception:
        part = None
    if part is not None:
        more = words.culprits(_from_partial(part), target)
        return Shown(part.module, symbols | {c.symbol for c in part.culprits if c.symbol},
                     _merged(diags, more))
    try:
        more = words.culprits(_listed(module, target, words), target)
    except Exception:
        more = []
    return Shown(module, symbols, _merged(diags, more))


def _merged(first: list[LensDiagnostic], more: list[LensDiagnostic]) -> list[LensDiagnostic]:
    """Both lists, one diagnostic per node (the first's wins), in node order."""
    seen = {d.line for d in first if d.line is not None}
    out = first + [d for d in more if d.line is None or d.line not in seen]
    return sorted(out, key=lambda d: (d.line is None, d.line or 0))

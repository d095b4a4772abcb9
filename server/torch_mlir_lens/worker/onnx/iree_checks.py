"""Verify and export of an ONNX model at an IREE target: what IREE compiled, run on the
model's inputs and compared with onnxruntime (reference.py), or written as a `.vmfb`.

    verify_iree(lowerer, reference_model, target=..., dims=..., rtol=..., atol=...)
        → VerifyResult
    export_iree(lowerer, target, output, arch=...) → {"path", "bytes", "target", "arch"}

As for a PyTorch module (worker/iree/verify.py, export.py), with onnxruntime in eager's
place: the same inputs as the other targets' Verify (reference.py: the test data beside the
model, else generated), the same tolerances and words. A model IREE cannot take has the IREE
target's findings at their nodes (iree_targets.py); a GPU target compiles and is not run on a
machine without that GPU ("compiled, not run: no device", no verdict).
"""

from __future__ import annotations

import os
import time
from typing import Any

import onnx

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LensError, Severity
from torch_mlir_lens.protocol.verify_results import VerifyResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.iree_targets import IREE_DEVICES, arch_title
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.worker.iree import runtime
from torch_mlir_lens.worker.iree.export import export_vmfb
from torch_mlir_lens.worker.iree.lowering import compile_for
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.onnx.iree_targets import lower_iree
from torch_mlir_lens.worker.onnx.lowerer import OnnxLowerer
from torch_mlir_lens.worker.onnx.reference import Reference, model_inputs
from torch_mlir_lens.worker.verify.compare import (
    compare_output,
    mismatch_diagnostics,
    verdict_message,
)


def _failed(name: str, diags: list[LensDiagnostic], message: str, kind: str,
            rtol: float | None, atol: float | None, start: float) -> VerifyResult:
    seconds = round(time.perf_counter() - start, 6)
    return VerifyResult(module=name, ok=False, rtol=rtol, atol=atol,
                        timings={"total": seconds}, diagnostics=diags,
                        message=f"✗ {message}", kind=kind)


def _not_run(name: str, target: str, why: str, rtol: float | None, atol: float | None,
             start: float) -> VerifyResult:
    message = f"Verify could not run it: {why}: no verdict on the model"
    diag = LensDiagnostic(severity=Severity.ERROR, message=message,
                          kind=ErrorKind.VERIFY_ERROR, target=target)
    return _failed(name, [diag], message, ErrorKind.VERIFY_ERROR, rtol, atol, start)


def _compile_failure(lowerer: OnnxLowerer, target: str, rtol: float | None,
                     atol: float | None, start: float) -> VerifyResult:
    """The IREE target's findings, at their nodes, as Verify's failure."""
    lowered = lower_iree(lowerer, target, arch=None, options=LowerOptions())
    diags = lowered.diagnostics or [LensDiagnostic(
        severity=Severity.ERROR, message=f"{target_title(target)}: iree-compile failed",
        kind=ErrorKind.COMPILE_ERROR, target=target)]
    kind = diags[0].kind or ErrorKind.COMPILE_ERROR
    message = culprits.summary(diags, target, lowerer.path) \
        if kind == ErrorKind.UNSUPPORTED_OP else diags[0].message
    return _failed(lowerer.module_name, diags, message, kind, rtol, atol, start)


def verify_iree(lowerer: OnnxLowerer, reference_model: onnx.ModelProto, *, target: str,
                dims: dict[str, int], rtol: float | None = None,
                atol: float | None = None) -> VerifyResult:
    """The model compiled by IREE for `target`, run by IREE's runtime and compared with
    onnxruntime (module docstring). Raises LensError when IREE is missing."""
    import torch

    name, start = lowerer.module_name, time.perf_counter()
    try:
        _install, compiled = compile_for(lowerer, target, None, weightless=False)
    except LensError as err:
        if err.kind in (ErrorKind.MISSING_DEPENDENCY, ErrorKind.BAD_REQUEST):
            raise
        return _compile_failure(lowerer, target, rtol, atol, start)
    if not compiled.ok or compiled.vmfb is None:
        return _compile_failure(lowerer, target, rtol, atol, start)
    compiled_s = time.perf_counter() - start
    device = IREE_DEVICES[target].driver
    missing = runtime.device_error(device)
    if missing is not None:
        return _not_run(name, target, f"{target_title(target)} ({arch_title(target, None)}): "
                        f"compiled, not run: no device ({missing})", rtol, atol, start)
    inputs = model_inputs(reference_model, lowerer.path, dims)
    try:
        reference = Reference(reference_model, lowerer.path)
        expected = reference.run(inputs.arrays)
        actual = runtime.load(compiled.vmfb, device)(inputs.arrays)
    except LensError as err:  # one of Verify's own steps: no verdict on the model
        return _failed(name, [err.to_diagnostic(target)], f"Verify could not run: "
                       f"{err.message}", ErrorKind.VERIFY_ERROR, rtol, atol, start)
    except Exception as exc:  # IREE's runtime refusing the call (shapes, a failed assert)
        message = f"Verify could not run: IREE's runtime failed: {exc}".splitlines()[0]
        diag = LensDiagnostic(severity=Severity.ERROR, message=message,
                              kind=ErrorKind.VERIFY_ERROR, target=target)
        return _failed(name, [diag], message, ErrorKind.VERIFY_ERROR, rtol, atol, start)
    if len(actual) != len(expected):
        message = (f"Verify could not run: the compiled function returns {len(actual)} "
                   f"tensors, {reference.name} {len(expected)}")
        diag = LensDiagnostic(severity=Severity.ERROR, message=message,
                              kind=ErrorKind.VERIFY_ERROR, target=target)
        return _failed(name, [diag], message, ErrorKind.VERIFY_ERROR, rtol, atol, start)
    outputs = []
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        want = torch.from_numpy(e.copy())
        outputs.append(compare_output(i, runtime.to_torch(a, want).to(want.dtype), want,
                                      rtol, atol))
    ok = all(o.ok for o in outputs)
    diagnostics = [] if ok else mismatch_diagnostics(outputs)
    for diag in diagnostics:
        diag.target = target
    result = VerifyResult(
        module=name, ok=ok, outputs=outputs, rtol=rtol, atol=atol, diagnostics=diagnostics,
        message=verdict_message(outputs).replace("eager PyTorch", reference.name).replace(
            "eager", reference.name),
        kind=None if ok else ErrorKind.VERIFY_MISMATCH,
        max_abs_err=max((o.max_abs_err for o in outputs), default=0.0),
        timings={"iree_compile": round(compiled_s, 6),
                 "total": round(time.perf_counter() - start, 6)})
    result.inputs_source = inputs.source
    return result


def export_iree(lowerer: OnnxLowerer, target: str, output: str, *,
                arch: str | None) -> dict[str, Any]:
    """The model compiled by IREE for `target` (its weights inside) written to `output`;
    LensError when it does not compile, at the node IREE's error names."""
    try:
        return export_vmfb(lowerer, target, os.path.abspath(output), arch=arch,
                           weightless=False)
    except LensError as err:
        node = lowerer.graph().node(err.line) if err.line else None
        if err.kind == ErrorKind.COMPILE_ERROR and node is not None:
            # IREE's errors are worded for lines (worker/iree/compile_errors.py).
            err.message = err.message.replace(" cannot compile this line:",
                                              f" cannot compile {node.label()}:", 1)
        raise


__all__ = ["export_iree", "verify_iree"]

"""Verify for an ONNX model: its compiled IR run and compared with onnxruntime.

    verify_model(lowerer, reference_model, dims=..., backend="linalg") → VerifyResult

The IR of `backend` (TOSA's and StableHLO's converted to Linalg, as for a PyTorch module:
verify/backends.py) is lowered to LLVM, JIT-compiled and run on the model's inputs
(reference.py); onnxruntime (else, for an operator it has no kernel for, onnx's reference
evaluator) runs the model as its file has it (`reference_model`: the model
before any fix, so a fix is proven against what the user has). Every output is compared with
Verify's tolerances. The verdict's words and exit codes are Verify's.
"""

from __future__ import annotations

import time
from typing import Any

import onnx

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.protocol.verify_results import VerifyResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.worker.onnx.lowerer import OnnxLowerer
from torch_mlir_lens.worker.onnx.reference import Reference, model_inputs
from torch_mlir_lens.worker.verify.backends import linalg_of
from torch_mlir_lens.worker.verify.linalg import verify_linalg_module


def _failed(name: str, diags: list[Any], message: str, kind: str,
            rtol: float | None, atol: float | None, seconds: float) -> VerifyResult:
    return VerifyResult(module=name, ok=False, rtol=rtol, atol=atol,
                        timings={"lower": round(seconds, 6), "total": round(seconds, 6)},
                        diagnostics=diags, message=f"✗ {message}", kind=kind)


def verify_model(lowerer: OnnxLowerer, reference_model: onnx.ModelProto, *,
                 dims: dict[str, int], backend: str = "linalg", rtol: float | None = None,
                 atol: float | None = None, opt_level: int = 0) -> VerifyResult:
    """The verdict of `lowerer`'s model on `backend` against onnxruntime (module docstring)."""
    import torch

    name = lowerer.module_name
    start = time.perf_counter()
    try:
        linalg = linalg_of(lowerer, backend)
    except LensError as err:
        if err.kind == ErrorKind.BAD_REQUEST:
            raise
        seconds = time.perf_counter() - start
        if err.kind != ErrorKind.LOWERING_ERROR:
            return _failed(name, [err.to_diagnostic(backend)], err.message, err.kind, rtol,
                           atol, seconds)
        diags = lowerer.lower(backend).diagnostics or [err.to_diagnostic(backend)]
        return _failed(name, diags, culprits.summary(diags, backend, lowerer.path),
                       diags[0].kind, rtol, atol, seconds)
    lower_s = time.perf_counter() - start
    inputs = model_inputs(reference_model, lowerer.path, dims)
    try:
        reference = Reference(reference_model, lowerer.path)
    except LensError as err:  # one of Verify's own steps: no verdict on the model
        return _failed(name, [err.to_diagnostic(backend)], f"Verify could not run: "
                       f"{err.message}", ErrorKind.VERIFY_ERROR, rtol, atol, lower_s)
    tensors = [torch.from_numpy(a.copy()) for a in inputs.arrays]
    result = verify_linalg_module(linalg, reference, tensors, module_name=name, rtol=rtol,
                                  atol=atol, opt_level=opt_level, user_files=lowerer.users)
    result.inputs_source = inputs.source
    result.timings["lower"] = round(lower_s, 6)
    if result.ok or result.kind == ErrorKind.VERIFY_MISMATCH:
        against = reference.name  # onnxruntime, else onnx's reference evaluator
        result.message = result.message.replace("eager PyTorch", against).replace(
            "eager", against)
    return result

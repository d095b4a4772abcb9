"""Verify: run the lowered IR and compare it with eager PyTorch.

    (VerifyOutput, VerifyResult: what a verification returns, are in `protocol/verify_results.py`)
    compare.py  per-dtype tolerances, one output against eager, the one-line verdict
    jit.py      JIT an LLVM-dialect module, call it through the C interface (memref ABI)
    link_errors.py  a failed link: the symbols LLVM did not find, and why each was needed
    linalg.py   verify_linalg_module: linalg → LLVM → JIT → run → compare, errors as results
    job.py      the `verify` job: load, inputs, export, then the above (+ first diverging line)
    divergence.py  the first line whose value diverges from eager
    sizes.py    the sizes Verify runs at, named by the `dynamic=` spec
    backends.py  TOSA / StableHLO verified through Linalg

This package re-exports the names the rest of the worker uses; `job.py` is imported by its
full name (it reaches back to the worker's job helpers).
"""

from __future__ import annotations

from torch_mlir_lens.protocol.verify_results import VerifyOutput, VerifyResult
from torch_mlir_lens.worker.verify.compare import (
    compare_output,
    default_tolerances,
    verdict_message,
)
from torch_mlir_lens.worker.verify.jit import (
    FuncSig,
    TensorSig,
    function_signature,
    jit,
    run_compiled,
)
from torch_mlir_lens.worker.verify.linalg import flat_tensors, run_eager, verify_linalg_module

__all__ = [
    "FuncSig",
    "TensorSig",
    "VerifyOutput",
    "VerifyResult",
    "compare_output",
    "default_tolerances",
    "flat_tensors",
    "function_signature",
    "jit",
    "run_compiled",
    "run_eager",
    "verdict_message",
    "verify_linalg_module",
]

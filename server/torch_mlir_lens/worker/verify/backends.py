"""The Linalg module Verify runs for a backend: Linalg's own, or TOSA's / StableHLO's IR
converted to Linalg (rules/targets.py, LINALG_FROM_BACKEND), so that Verify checks the ops
that backend produced.

    linalg_of(lowerer, backend)   → a linalg-on-tensors module op (the lowerer's is not changed)
"""

from __future__ import annotations

from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.rules.targets import LINALG_FROM_BACKEND, target_title


def linalg_of(lowerer: Any, backend: str) -> Any:
    """`backend`'s lowering of the lowerer's program as linalg-on-tensors. A backend that
    rejects the module raises its LensError (lowering-error); one whose IR does not convert
    raises LensError("verify-error") naming the first error."""
    from torch_mlir_lens.worker.stages.pipeline import PassFailure, run_pipeline

    if backend == "linalg":
        return lowerer.module_for("linalg")
    pipeline = LINALG_FROM_BACKEND.get(backend)
    if pipeline is None:
        raise LensError(ErrorKind.BAD_REQUEST,
                        f"Verify runs linalg, tosa or stablehlo, not {backend!r}")
    module = lowerer.module_for(backend).clone()
    try:
        run_pipeline(module, pipeline)
    except PassFailure as failure:
        first = failure.errors[0].message.splitlines()[0] if failure.errors else "failed"
        raise LensError(ErrorKind.VERIFY_ERROR,
                        f"{target_title(backend)}'s IR does not convert to Linalg to run: "
                        f"{first}") from failure
    return module


__all__ = ["linalg_of"]

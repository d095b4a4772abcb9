"""The Linalg module Verify runs for a backend: Linalg's own, or TOSA's / StableHLO's IR
converted to Linalg (rules/targets.py, LINALG_FROM_BACKEND), so that Verify checks the ops
that backend produced.

    linalg_of(lowerer, backend)   → a linalg-on-tensors module op (the lowerer's is not changed)

torch-mlir's StableHLO-to-Linalg passes "succeed" and leave behind what they cannot convert
(`stablehlo.scatter` of a `scatter_add`, `stablehlo.sort`): the LLVM step then fails on
something else (`bufferization.to_tensor`). Such an op is named here, at its line, as what
keeps Verify from running that backend's IR: a failure of Verify's own steps, not a verdict.
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
    left = _unconverted(module, backend, getattr(lowerer, "users", ()))
    if left:
        names = ", ".join(f"`{name}`" + (f" (line {line})" if line else "")
                          for name, _file, line in left[:3])
        more = f" and {len(left) - 3} more" if len(left) > 3 else ""
        _name, file, line = left[0]
        raise LensError(
            ErrorKind.VERIFY_ERROR,
            f"Verify could not run {target_title(backend)}'s IR: {names}{more} has no "
            f"conversion to Linalg in torch-mlir's {target_title(backend)} passes, which "
            f"Verify needs to run it here: no verdict on the module",
            file=file, line=line)
    return module


def _unconverted(module: Any, backend: str,
                 users: Any) -> list[tuple[str, str | None, int | None]]:
    """(op name, file, line) of each op of `backend`'s dialect the conversion left, each
    name once, located at the user's innermost frame when it has one."""
    from torch_mlir import ir

    from torch_mlir_lens.worker.ir.locations import user_frames_of

    prefix = f"{backend}."
    found: dict[str, tuple[str, str | None, int | None]] = {}

    def visit(op: Any) -> Any:
        name = op.name
        used = any(True for result in op.results for _use in result.uses)
        if name.startswith(prefix) and name not in found and name != f"{prefix}return" \
                and (used or not op.results):  # a dead shape constant is no obstacle
            frames = user_frames_of(op.location, users)
            file, line = frames[0] if frames else (None, None)
            found[name] = (name, file, line)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return list(found.values())


__all__ = ["linalg_of"]

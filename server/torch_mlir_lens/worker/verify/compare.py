"""Compare compiled outputs with eager ones: per-dtype tolerances, element errors, the verdict.

An element matches when |actual - expected| <= atol + rtol * |expected| (as torch.isclose);
integers and booleans must be exact. The words of the verdict ("✓ matches eager", "✗ differs:
output 0, ...") are made here and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, Severity
from torch_mlir_lens.protocol.verify_results import VerifyOutput

# Why these: the compiled code computes the same math in a different order than eager's
# kernels (oneDNN / MKL blocked, vectorized reductions vs plain sequential loops). The error of
# a K-term sum grows like K·eps·Σ|terms|, so it scales with the *terms*, not the result: where
# terms cancel, the result is small and its absolute error is not. Measured here: the sum of
# 512 N(0,1) values differs by 1.7e-5 from eager at an output of ~0.7. So for float32, rtol
# 1e-5 (≈ 84 ulps; torch.testing uses 1.3e-6 for single ops) and atol 1e-4 (10× torch.testing's
# 1e-5) for cancellation; a wrong lowering is off by far more than that. Half types: rtol of a
# few ulps (11 mantissa bits for f16, 8 for bf16), atol alike since compiled code may also
# accumulate in the narrow type. Integers and booleans must be exact.
_FLOAT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-5, 1e-4),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


def default_tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing a compiled output of `dtype` with eager: exact for ints/bool."""
    if dtype in _FLOAT_TOLERANCES:
        return _FLOAT_TOLERANCES[dtype]
    if dtype.is_floating_point or dtype.is_complex:
        return _FLOAT_TOLERANCES[torch.float32]
    return (0.0, 0.0)


def _index_list(flat_index: int, shape: Sequence[int]) -> list[int]:
    if not shape:
        return []
    return [int(i) for i in np.unravel_index(flat_index, tuple(shape))]


def _error_arrays(actual: torch.Tensor, expected: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(|actual - expected|, |expected|) as float64; NaN==NaN and equal infinities count as 0."""
    a = actual.detach().to(torch.float64).numpy().reshape(-1)
    e = expected.detach().to(torch.float64).numpy().reshape(-1)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    diff = np.where(same, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)  # one NaN, or inf vs -inf
    return diff, np.abs(e)


def compare_output(
    index: int, actual: torch.Tensor, expected: torch.Tensor,
    rtol: float | None = None, atol: float | None = None,
) -> VerifyOutput:
    """Compare one compiled output with its eager value: shape, dtype, then every element.

    An element matches when |actual - expected| <= atol + rtol * |expected| (as torch.isclose).
    Given tolerances apply to floating outputs; integers and booleans are always exact.
    """
    shape = list(expected.shape)
    dtype = str(expected.dtype).removeprefix("torch.")
    d_rtol, d_atol = default_tolerances(expected.dtype)
    if expected.dtype.is_floating_point or expected.dtype.is_complex:
        rtol = d_rtol if rtol is None else rtol
        atol = d_atol if atol is None else atol
    else:
        rtol, atol = d_rtol, d_atol

    def failed(message: str) -> VerifyOutput:
        return VerifyOutput(index, shape, dtype, math.inf, math.inf, [], False, message, rtol, atol)

    if list(actual.shape) != shape:
        return failed(f"output {index}: shape {list(actual.shape)}, eager {shape}")
    if actual.dtype != expected.dtype:
        got = str(actual.dtype).removeprefix("torch.")
        return failed(f"output {index}: dtype {got}, eager {dtype}")
    if expected.dtype.is_complex:
        return failed(f"output {index}: complex outputs are not compared")
    if expected.numel() == 0:
        return VerifyOutput(index, shape, dtype, 0.0, 0.0, [], True, f"output {index}: empty",
                            rtol, atol)
    diff, mag = _error_arrays(actual, expected)
    # A NaN or infinite eager value tolerates nothing but itself (diff is 0 when equal).
    tol = np.where(np.isfinite(mag), atol + rtol * np.where(np.isfinite(mag), mag, 0.0), 0.0)
    bad = diff > tol
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / tol)  # how far beyond its tolerance
        rel = np.where(mag > 0, diff / np.where(mag > 0, mag, 1.0), 0.0)
        rel = np.where(np.isnan(rel), 0.0, rel)
    worst = int(np.argmax(ratio)) if bad.any() else int(np.argmax(diff))
    ok = not bool(bad.any())
    out = VerifyOutput(
        index, shape, dtype, float(diff.max()), float(rel.max()),
        _index_list(worst, shape), ok, "", rtol, atol,
    )
    out.message = _output_message(out, float(diff[worst]), int(bad.sum()), diff.size)
    return out


def reinterpret_like(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Signless MLIR integers are read as signed: view as eager's unsigned type if it has one."""
    if (
        actual.dtype != expected.dtype
        and not actual.dtype.is_floating_point and actual.dtype != torch.bool
        and not expected.dtype.is_floating_point and expected.dtype != torch.bool
        and actual.element_size() == expected.element_size()
    ):
        return actual.view(expected.dtype)
    return actual


def format_error(x: float) -> str:
    """An error as the verdicts write it: two significant digits, "inf" / "nan" as such."""
    return f"{x:.2g}" if math.isfinite(x) else str(x)


def _output_message(out: VerifyOutput, worst_err: float, n_bad: int, n: int) -> str:
    if out.ok:
        return f"output {out.index}: matches (max err {format_error(out.max_abs_err)})"
    return (
        f"output {out.index}: max err {format_error(worst_err)} at {out.worst_index} "
        f"({n_bad} of {n} elements beyond rtol={out.rtol:g}, atol={out.atol:g})"
    )


def verdict_message(outputs: Sequence[VerifyOutput]) -> str:
    """The one-line verdict: "✓ matches eager (max err 2e-07)" or "✗ differs: output 0, ..."."""
    bad = [o for o in outputs if not o.ok]
    if not bad:
        errs = [o.max_abs_err for o in outputs]
        return f"✓ matches eager (max err {format_error(max(errs, default=0.0))})"
    first = bad[0]
    more = f" (+{len(bad) - 1} more outputs)" if len(bad) > 1 else ""
    if not first.worst_index and not math.isfinite(first.max_abs_err):
        return f"✗ differs: {first.message}{more}"
    detail = first.message.split(": ", 1)[1].split(" (", 1)[0]
    return f"✗ differs: output {first.index}, {detail}{more}"


def mismatch_diagnostics(outputs: Sequence[VerifyOutput]) -> list[LensDiagnostic]:
    """One diagnostic per differing output (the caller places them on the module)."""
    return [
        LensDiagnostic(
            severity=Severity.ERROR, message=f"compiled result differs from eager: {o.message}",
            kind=ErrorKind.VERIFY_MISMATCH, target="llvm",
        )
        for o in outputs if not o.ok
    ]

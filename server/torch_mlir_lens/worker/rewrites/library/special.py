"""Special functions the backends lack, in elementary ops they all have.

Each function is plain PyTorch, imports only `math` and `torch`, and is copied as is into the
export code a user takes away (worker/rewrites/snippet.py): keep it self-contained.
"""

from __future__ import annotations

import math

import torch


def erfinv_newton(y: torch.Tensor) -> torch.Tensor:
    """`torch.erfinv(y)` from `log`, `sqrt`, `exp`, `erf` and polynomials.

    Method: M. Giles' single-precision approximation ("Approximating the erfinv function",
    GPU Computing Gems, 2010: two polynomials in w = -log((1 - y)(1 + y))), refined by two
    Newton steps on erf(x) = y. Accuracy, float32, measured against float64 `erfinv` over
    200,001 points of [-1, 1]: max absolute error 4.3e-7, max relative error 2.0e-7, as close
    as float32's own `torch.erfinv`. Domain: [-1, 1]; ±1 give ±inf, |y| > 1 and NaN give NaN,
    ±0 keep their sign. float16 and bfloat16 are computed in float32; float64 converges to
    about 1e-15 (the second Newton step).
    """
    low = y.dtype in (torch.float16, torch.bfloat16)
    x32 = y.float() if low else y
    w = -torch.log((1.0 - x32) * (1.0 + x32))
    central = w - 2.5
    p = torch.full_like(x32, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
        p = c + p * central
    tail = torch.sqrt(w) - 3.0
    q = torch.full_like(x32, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
        q = c + q * tail
    x = torch.where(w < 5.0, p, q) * x32
    inside = torch.abs(x32) < 1.0
    x = torch.where(inside, x, torch.zeros_like(x))  # keep the Newton steps finite
    for _ in range(2):
        slope = (2.0 / math.sqrt(math.pi)) * torch.exp(-x * x)
        x = x - (torch.erf(x) - x32) / slope
    edge = torch.where(torch.abs(x32) == 1.0, x32 * math.inf, torch.full_like(x32, math.nan))
    out = torch.where(inside, x, edge)
    return out.to(y.dtype) if low else out


def _floating(x: torch.Tensor) -> torch.Tensor:
    """x as the float PyTorch computes an integer input's result in (the default dtype)."""
    return x if x.dtype.is_floating_point else x.to(torch.get_default_dtype())


def _negative(x: torch.Tensor) -> torch.Tensor:
    """x < 0, -0.0 included (1 / -0.0 is -inf), without copysign (TOSA has none)."""
    return (x < 0) | ((x == 0) & (1.0 / x < 0))


def atan2_by_atan(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """`torch.atan2(y, x)` from `atan` and the quadrant.

    Method: atan(y / x), moved by ±pi when x < 0; x = 0 and infinite operands by the IEEE
    rules (atan2(±0, -0) = ±pi, atan2(±inf, ±inf) = ±pi/4 or ±3pi/4, ...); NaN stays NaN.
    Error: that of `atan` and of the division (a few float ulp).
    """
    y, x = _floating(self), _floating(other)
    y, x = torch.broadcast_tensors(y, x)
    half = math.pi / 2
    y_neg = _negative(y)
    base = torch.atan(y / x)
    signed_pi = torch.where(y_neg, torch.full_like(y, -math.pi), torch.full_like(y, math.pi))
    out = torch.where(_negative(x), base + signed_pi, base)
    zero_x = x == 0
    out = torch.where(zero_x & (y > 0), torch.full_like(y, half), out)
    out = torch.where(zero_x & (y < 0), torch.full_like(y, -half), out)
    both_zero = zero_x & (y == 0)
    out = torch.where(both_zero, torch.where(_negative(x), signed_pi, y * 0.0), out)
    y_inf, x_inf = torch.isinf(y), torch.isinf(x)
    corner = torch.where(x > 0, torch.full_like(y, math.pi / 4),
                         torch.full_like(y, 3 * math.pi / 4))
    corner = torch.where(y_neg, -corner, corner)
    out = torch.where(y_inf & x_inf, corner, out)
    side = torch.where(y_neg, torch.full_like(y, -half), torch.full_like(y, half))
    out = torch.where(y_inf & ~x_inf & ~torch.isnan(x), side, out)
    far = torch.where(x > 0, y * 0.0, signed_pi)
    out = torch.where(x_inf & ~y_inf & ~torch.isnan(y), far, out)
    return torch.where(torch.isnan(x) | torch.isnan(y), x + y, out)


def asin_by_atan(self: torch.Tensor) -> torch.Tensor:
    """`torch.asin(x)` = atan(x / sqrt((1 - x)(1 + x))): ±1 give ±pi/2 (x / 0), |x| > 1
    NaN. Error: that of `atan`, `sqrt` (a few float ulp)."""
    x = _floating(self)
    return torch.atan(x / torch.sqrt((1.0 - x) * (1.0 + x)))


def acos_by_atan(self: torch.Tensor) -> torch.Tensor:
    """`torch.acos(x)` = 2·atan(sqrt((1 - x) / (1 + x))): -1 gives pi, 1 gives 0, |x| > 1
    NaN. Error: a few float ulp."""
    x = _floating(self)
    return 2.0 * torch.atan(torch.sqrt((1.0 - x) / (1.0 + x)))


def sinh_by_expm1(self: torch.Tensor) -> torch.Tensor:
    """`torch.sinh(x)` = (expm1(x) - expm1(-x)) / 2: exact-enough near 0 (no cancellation of
    exp), overflows to ±inf where sinh does. Error: a few float ulp."""
    x = _floating(self)
    return (torch.expm1(x) - torch.expm1(-x)) / 2.0


def cosh_by_exp(self: torch.Tensor) -> torch.Tensor:
    """`torch.cosh(x)` = (exp(x) + exp(-x)) / 2. Error: a few float ulp."""
    x = _floating(self)
    return (torch.exp(x) + torch.exp(-x)) / 2.0


def asinh_by_log1p(self: torch.Tensor) -> torch.Tensor:
    """`torch.asinh(x)` = sign(x)·log1p(|x| + x² / (1 + sqrt(1 + x²))), and log|x| + log 2
    for |x| > 2^28 (where x² would overflow). Error: a few float ulp."""
    x = _floating(self)
    a = torch.abs(x)
    small = torch.log1p(a + a * a / (1.0 + torch.sqrt(1.0 + a * a)))
    large = torch.log(a) + math.log(2.0)
    r = torch.where(a > 2.0 ** 28, large, small)
    return torch.where(x < 0, -r, r)


def acosh_by_log1p(self: torch.Tensor) -> torch.Tensor:
    """`torch.acosh(x)` = log1p((x - 1) + sqrt((x - 1)(x + 1))), and log x + log 2 for
    x > 2^28; x < 1 gives NaN. Error: a few float ulp."""
    x = _floating(self)
    t = x - 1.0
    small = torch.log1p(t + torch.sqrt(t * (x + 1.0)))
    small = torch.where(x < 1.0, torch.full_like(x, math.nan), small)  # -inf·-inf is not
    return torch.where(x > 2.0 ** 28, torch.log(x) + math.log(2.0), small)


def atanh_by_log1p(self: torch.Tensor) -> torch.Tensor:
    """`torch.atanh(x)` = (log1p(x) - log1p(-x)) / 2: accurate near ±1 (each log1p is), ±1
    give ±inf, |x| > 1 NaN. Error: a few float ulp."""
    x = _floating(self)
    return 0.5 * (torch.log1p(x) - torch.log1p(-x))

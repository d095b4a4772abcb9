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

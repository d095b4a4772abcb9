"""Stands for a library: a plain helper function (not a `forward`) making several ops TOSA
rejects. Non-strict export keeps no frame of it, so every op lands on the user's calling line
and its call can only be named from what torch.export recorded of it."""

import torch
import torch.nn.functional as F


def many_rejected_calls(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.special.erfinv(x * 0.5)
    b = torch.fmod(x, 2.0)
    c = torch.roll(x, 1, 0)
    d = F.interpolate(x, scale_factor=2.0)
    e = torch.cumprod(x, 1)
    f = torch.logcumsumexp(x, 1)
    return a + b + c + e + f, d


def builtins_and_python_functions(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    a = F.linear(x, w)  # a builtin of torch._C._nn: torch has no `linear`
    b = torch.special.erfinv(a * 0.1)  # the builtin `special_erfinv`
    c = F.scaled_dot_product_attention(b, b, b)
    return F.interpolate(c, scale_factor=2.0)  # a Python function

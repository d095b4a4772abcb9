"""Modules that use ops some torch-mlir backends cannot lower (torch-mlir 20261001).

Open this file with Torch-MLIR Lens, or run `torch-mlir-lens check examples/unsupported_ops.py`:
each unsupported op is reported at its line, for every backend, all of them at once.

    module              linalg                tosa                          stablehlo
    QuantileHead        erfinv, fmod          erfinv, fmod                  erfinv, fmod
    ShiftedFeatures     ok                    roll, atan2, scatter_add      ok
    RobustUpsampler     ok                    interpolate, kthvalue         interpolate, kthvalue, diag
    LogGammaPrior       lgamma, hypot: not supported by torch-mlir itself (all backends)
"""

import torch
import torch.nn.functional as F
from torch import nn


# torch-mlir-lens: inputs=(torch.rand(4, 16),)
class QuantileHead(nn.Module):
    """Turns probabilities into Gaussian quantiles, then wraps them into a periodic range."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, p):
        p = torch.sigmoid(self.proj(p))
        z = torch.erfinv(2.0 * p - 1.0) * 1.4142135
        wrapped = torch.fmod(z, 3.0)
        return wrapped + z


# torch-mlir-lens: inputs=(torch.randn(4, 16),)
class ShiftedFeatures(nn.Module):
    """Mixes each feature with its neighbour and its angle, and accumulates into buckets."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buckets", torch.zeros(4, 2, dtype=torch.long))

    def forward(self, x):
        shifted = torch.roll(x, shifts=1, dims=1)
        angle = torch.atan2(x, shifted)
        acc = angle.scatter_add(1, self.buckets, x[:, :2])
        return acc * 0.5


# torch-mlir-lens: inputs=(torch.randn(1, 3, 8, 8),)
class RobustUpsampler(nn.Module):
    """Upsamples a feature map and normalises it by a robust (k-th value) scale."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        y = F.interpolate(y, scale_factor=2.0, mode="nearest")
        scale = torch.kthvalue(y.flatten(1), 5, dim=1).values
        y = y / scale.abs().clamp(min=1e-3)[:, None, None, None]
        gram = y.flatten(2)[0, :, :4]
        return y, torch.diag(gram)


# torch-mlir-lens: inputs=(torch.rand(4, 16) + 0.5,)
class LogGammaPrior(nn.Module):
    """A log-Gamma prior term with a Euclidean magnitude."""

    def forward(self, alpha):
        prior = torch.lgamma(alpha).sum(dim=-1)
        magnitude = torch.hypot(alpha, alpha + 1.0)
        return prior, magnitude

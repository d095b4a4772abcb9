"""Small modules with known backend support, for CLI check/lower tests."""

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class Rolls(nn.Module):
    """torch.roll lowers to linalg and stablehlo, not to TOSA."""

    def forward(self, x):
        y = torch.relu(x)
        return torch.roll(y, 1, 0)


# torch-mlir-lens: inputs=(torch.rand(4, 8) * 0.45,)
class InverseErf(nn.Module):
    """torch.erfinv lowers to no backend; its rewrite is proven on each (inputs below 0.9)."""

    def forward(self, x):
        y = x * 2.0
        return torch.erfinv(y)


class NoInputs(nn.Module):
    """No inputs comment and nothing to infer them from: `check` skips it."""

    def forward(self, x, y):
        return x @ y

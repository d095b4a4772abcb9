"""Modules with known culprits, for the precision suite (test_precision.py).

A line that some backend rejects ends with `# rejects: <backends>`; every other line of a
`forward` lowers on every backend when lowered alone. One bad op per line, several per module,
ops decomposed before the backend sees them, data-dependent ops and ops inside library code.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Elementwise(nn.Module):
    """Plain elementwise ops between rejected ones."""

    def forward(self, x):
        a = torch.relu(x)
        b = torch.erfinv(a * 0.5)  # rejects: linalg tosa stablehlo
        c = torch.sigmoid(b)
        d = torch.fmod(c, 0.3)  # rejects: linalg tosa stablehlo
        e = torch.atan2(d, x)  # rejects: tosa
        return torch.tanh(e) + a


class Decomposed(nn.Module):
    """Ops torch-mlir decomposes into others before the backend sees them."""

    def forward(self, x):
        y = torch.softmax(x, dim=-1)
        r = torch.roll(y, 2, 1)  # rejects: tosa
        z = r.flip(0)
        s = torch.nn.functional.layer_norm(z, (8,))
        return s * 2.0


class DataDependent(nn.Module):
    """Ops whose output shape depends on values, with the checks torch.export adds."""

    def forward(self, x):
        y = x * 3.0
        m = torch.masked_select(y, y > 0)  # rejects: linalg tosa stablehlo
        n = torch.nonzero(x > 0.5)  # rejects: tosa stablehlo
        return m.sum() + n.sum() + y.mean()


class LibraryOps(nn.Module):
    """Rejected ops inside torch.nn modules: reported at the line that calls the module."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")

    def forward(self, x):
        y = self.conv(x)
        y = self.up(y)  # rejects: tosa stablehlo
        z = F.gelu(y)
        k = torch.kthvalue(z.flatten(1), 3, dim=1).values  # rejects: tosa stablehlo
        return z.mean() + k.sum()


INPUTS = {
    "Elementwise": lambda: (torch.rand(4, 8),),
    "Decomposed": lambda: (torch.randn(4, 8),),
    "DataDependent": lambda: (torch.randn(4, 8),),
    "LibraryOps": lambda: (torch.randn(1, 3, 8, 8),),
}

"""Small models for the Verify tests: known-good lowerings of several shapes and dtypes."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        return self.fc2(h)


class PaddedCNN(nn.Module):
    """Conv with padding: tensor.pad lowers to memref.copy (the memrefCopy path)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 3, padding=2, stride=2)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        y = self.pool(y)
        return torch.tanh(self.conv2(y))


class AttentionBlock(nn.Module):
    """Single-head self-attention; returns (output, attention weights)."""

    def __init__(self, d: int = 16) -> None:
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        self.scale = d**-0.5

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q, k, v = self.q(x), self.k(x), self.v(x)
        attn = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
        return self.norm(x + attn @ v), attn


class ArgmaxInt(nn.Module):
    """An int64 output."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x * 2.0 + 1.0, dim=-1)


class PositiveMask(nn.Module):
    """A bool output."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.sum(dim=1) > 0.0) & (x[:, 0] < 1.0)


class ScalarLoss(nn.Module):
    """A 0-d output (and a dict output, flattened like torch.export does)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> dict[str, torch.Tensor]:
        diff = x - y
        return {"loss": (diff * diff).mean(), "count": (diff > 0).sum()}


class ScaleByScalar(nn.Module):
    """A 0-d input and a 0-d output next to a 2-d one (the C interface's two descriptor shapes)."""

    def forward(self, x: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x * s + 1, s * 2


class IntArith(nn.Module):
    """int32 in, int32 out."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 3 + 7


class Unlowerable(nn.Module):
    """abs of a complex FFT: the torch → linalg conversion fails (math.absf on complex)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(x).abs()


class ScaleHeads(nn.Module):
    """Two outputs; the second is `x * 3.0`, one arith.constant a test can alter in the IR."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(self.fc(x)), x * 3.0


class BigOutputs(nn.Module):
    """Outputs of 256 KiB each: a leak of result buffers shows quickly in RSS."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.tanh(x) * 2.0, x + 1.0


class ScaledBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        h = h * 3.0  # the constant the divergence test alters
        return torch.tanh(h)


class NestedScale(nn.Module):
    """A submodule between two lines: a change inside it must be located inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(6, 8)
        self.block = ScaledBlock()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.relu(self.inp(x))
        z = self.block(y)
        return (z + 1.0).sum(-1), y

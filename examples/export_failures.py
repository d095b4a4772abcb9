"""Modules that torch.export cannot capture, each failing at a known line.

Torch-MLIR Lens reports the reason and the line, instead of a 200-line traceback.

    DataDependentBranch   `if x.sum() > 0:` branches on a tensor value (use torch.where/torch.cond)
    NumpyRoundTrip        `.numpy()` leaves torch; export traces with fake tensors
    ItemAsSize            `int(x.max().item())` turns a computed value into a Python int
    PointerHash           `x.data_ptr()`: no storage behind an exported tensor
"""

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class DataDependentBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            return torch.relu(h)
        return -h


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class NumpyRoundTrip(nn.Module):
    def forward(self, x):
        y = x * 2.0
        clipped = y.numpy().clip(-1.0, 1.0)
        return torch.from_numpy(clipped) + 1.0


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class ItemAsSize(nn.Module):
    def forward(self, x):
        keep = int(x.abs().max().item()) + 1
        return x[:, :keep]


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class PointerHash(nn.Module):
    def forward(self, x):
        salt = x.data_ptr() % 7
        return x + salt

"""A module with an op TOSA cannot lower (aten.roll): a failing lowering, the case where
torch-mlir's own error reporting writes a repro file with all weights to the temp folder."""

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(4, 64),)
class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        y = self.fc(x)
        return torch.roll(y, 1, 0)

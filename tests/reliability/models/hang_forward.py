"""Hostile: forward never returns, so the export hangs while tracing it."""

import torch  # noqa: F401  (the inputs comment uses it)
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class HangForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        n = 0
        while True:
            n += 1
        return self.fc(x)

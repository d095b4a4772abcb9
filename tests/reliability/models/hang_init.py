"""Hostile: the constructor never returns (a busy loop: no sleep a signal could cut short)."""

import torch  # noqa: F401  (the inputs comment uses it)
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class HangInit(nn.Module):
    def __init__(self):
        super().__init__()
        n = 0
        while True:
            n += 1

    def forward(self, x):
        return x + 1

"""Hostile: the constructor ends the whole worker process with os._exit(3)."""

import os

import torch  # noqa: F401  (the inputs comment uses it)
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class HardExit(nn.Module):
    def __init__(self):
        super().__init__()
        os._exit(3)

    def forward(self, x):
        return x + 1

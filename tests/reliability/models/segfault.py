"""Hostile: reads address 0 in forward, so the worker dies of SIGSEGV mid-export."""

import ctypes

import torch  # noqa: F401  (the inputs comment uses it)
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Segfault(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        ctypes.string_at(0)
        return self.fc(x)

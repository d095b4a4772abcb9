"""A module whose forward crashes the process that runs it (a segfault, not an exception)."""

import ctypes

import torch
import torch.nn as nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Crash(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ctypes.string_at(0)  # reads address 0: SIGSEGV in whoever executes this
        return x + 1

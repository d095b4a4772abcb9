"""A module whose export takes minutes (forward sleeps while torch.export traces it)."""

import time

import torch
import torch.nn as nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Slow(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(300)
        return x * 3

"""A module torch.export cannot trace: its forward branches on a tensor's value."""

import torch
import torch.nn as nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Branchy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        if y.sum() > 0:  # data-dependent control flow
            return y.relu()
        return y.tanh()

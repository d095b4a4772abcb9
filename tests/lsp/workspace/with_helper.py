"""A module whose forward calls a plain helper function of the same file."""

import torch
import torch.nn as nn


def swish(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return swish(self.fc(x))

"""Healthy modules: the control group that must keep working while hostile ones misbehave."""

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class Healthy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y)


# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class HealthyTwo(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.tanh(self.fc(x))
        return h + x

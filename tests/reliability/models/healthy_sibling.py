"""Healthy, but needs its own folder on sys.path and an unpatched torch: the global-state check."""

import torch
from helper_dims import WIDTH
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class HealthySibling(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, WIDTH)

    def forward(self, x):
        return torch.relu(self.fc(x))

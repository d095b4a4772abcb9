"""A long lowering: the constructor announces itself (slow_started) and then takes 8 s."""

import pathlib
import time

import torch
from torch import nn

HERE = pathlib.Path(__file__).resolve().parent


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        (HERE / "slow_started").write_text("started")
        time.sleep(8)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))

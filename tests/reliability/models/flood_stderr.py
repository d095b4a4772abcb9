"""Hostile: prints 100 MB to stderr (50 MB via sys.stderr, 50 MB to fd 2), then works."""

import os
import sys

import torch
from torch import nn

CHUNK = "e" * (2**20 - 1) + "\n"


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class FloodStderr(nn.Module):
    def __init__(self):
        super().__init__()
        for _ in range(50):
            sys.stderr.write(CHUNK)
        sys.stderr.flush()
        raw = CHUNK.encode()
        for _ in range(50):
            os.write(2, raw)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))

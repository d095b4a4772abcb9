"""Hostile: prints 100 MB to stdout (50 MB through print, 50 MB straight to fd 1), then works.

If the worker's stdout were the job channel, or a pipe nobody drains, this corrupts or blocks it.
"""

import os
import sys

import torch
from torch import nn

CHUNK = "x" * (2**20 - 1) + "\n"


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class FloodStdout(nn.Module):
    def __init__(self):
        super().__init__()
        for _ in range(50):
            print(CHUNK, end="")
        sys.stdout.flush()
        raw = CHUNK.encode()
        for _ in range(50):
            os.write(1, raw)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))

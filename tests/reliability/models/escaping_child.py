"""Hostile: a child in a new session (setsid), so killing the worker's process group misses it."""

import pathlib
import subprocess
import sys

import torch
from torch import nn

MARK = str(pathlib.Path(__file__).resolve().parent)


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class EscapingChild(nn.Module):
    def __init__(self):
        super().__init__()
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)", MARK, "escaped"],
            start_new_session=True,
        )
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))

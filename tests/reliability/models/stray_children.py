"""Hostile: the constructor starts child processes that outlive the call: a direct child, and a
grandchild orphaned by a shell that exits at once. Each carries this folder's path in its
command line, which is how the test finds them wherever they were re-parented."""

import pathlib
import subprocess
import sys

import torch
from torch import nn

MARK = str(pathlib.Path(__file__).resolve().parent)
SLEEPER = "import sys, time; time.sleep(600)"


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class StrayChildren(nn.Module):
    def __init__(self):
        super().__init__()
        subprocess.Popen([sys.executable, "-c", SLEEPER, MARK, "child"])
        orphan = f'"{sys.executable}" -c "{SLEEPER}" "{MARK}" orphan >/dev/null 2>&1 &'
        subprocess.run(["/bin/sh", "-c", orphan], check=True)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))

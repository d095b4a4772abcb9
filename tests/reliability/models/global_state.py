"""Hostile: changes the worker's global state for everyone after it: the working directory,
sys.path, and torch itself (export, Linear and relu patched to fail)."""

import os
import sys
import tempfile

import torch
from torch import nn


def _sabotaged(*args, **kwargs):
    raise RuntimeError("sabotaged by global_state.py")


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class GlobalState(nn.Module):
    def __init__(self):
        super().__init__()
        os.chdir(tempfile.gettempdir())
        sys.path[:] = ["/nonexistent"]
        torch.export.export = _sabotaged
        torch.nn.Linear.forward = _sabotaged
        torch.relu = _sabotaged
        torch.nn.functional.relu = _sabotaged
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return x * 2

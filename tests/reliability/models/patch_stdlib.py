"""Hostile: the constructor breaks the standard library for everyone after it: os.replace,
os.rename, shutil.move and tempfile.mkstemp raise (what an atomic write needs)."""

import os
import shutil
import tempfile

import torch  # noqa: F401  (the inputs comment uses it)
from torch import nn


def _sabotaged(*args, **kwargs):
    raise RuntimeError("sabotaged by patch_stdlib.py")


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class PatchStdlib(nn.Module):
    def __init__(self):
        super().__init__()
        os.replace = _sabotaged
        os.rename = _sabotaged
        shutil.move = _sabotaged
        tempfile.mkstemp = _sabotaged
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

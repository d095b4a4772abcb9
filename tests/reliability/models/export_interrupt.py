"""Hostile for exports: the constructor arms the worker so that it dies (os._exit) the moment it
renames a finished temporary file into place, or opens the destination itself for writing
(after truncating it, so that a non-atomic write is caught red-handed). Which one fired is noted
in interrupt_hit.txt. The destination is out/model.mlir next to this file."""

import builtins
import io
import os
import pathlib
import shutil

import torch
from torch import nn

HERE = pathlib.Path(__file__).resolve().parent
DEST = str(HERE / "out" / "model.mlir")
NOTE = HERE / "interrupt_hit.txt"
_real_open = builtins.open


def _note(what):
    fd = os.open(str(NOTE), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, (what + "\n").encode())
    os.close(fd)


def _die_on_rename(src, dst, *args, **kwargs):
    _note(f"rename {src} -> {dst}")
    os._exit(9)


def _guarded_open(file, mode="r", *args, **kwargs):
    handle = _real_open(file, mode, *args, **kwargs)
    named = not isinstance(file, int) and os.path.abspath(os.fspath(file)) == DEST
    if named and any(m in mode for m in "wax+"):
        _note(f"open {file} {mode}")
        os._exit(9)
    return handle


# torch-mlir-lens: inputs=(torch.randn(2, 16),)
class ExportInterrupt(nn.Module):
    def __init__(self):
        super().__init__()
        os.replace = _die_on_rename
        os.rename = _die_on_rename
        shutil.move = _die_on_rename
        builtins.open = _guarded_open
        io.open = _guarded_open
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.fc(x))

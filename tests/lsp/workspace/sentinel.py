"""Running any of this file's code leaves a file next to it: proof that user code ran."""

import pathlib

import torch
import torch.nn as nn

SENTINEL = pathlib.Path(__file__).with_name("sentinel-ran.txt")
_WRITTEN = SENTINEL.write_text("module-level assignment ran\n")  # the loader runs assignments


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Sentinel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        SENTINEL.write_text("constructor ran\n")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2

"""Hostile: forward recurses without end, after raising the recursion limit a hundredfold."""

import sys

import torch  # noqa: F401  (the inputs comment uses it)
from torch import nn


def deeper(n):
    return deeper(n + 1) + 1


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Recursion(nn.Module):
    def __init__(self):
        super().__init__()
        sys.setrecursionlimit(100_000)

    def forward(self, x):
        return x + deeper(0)

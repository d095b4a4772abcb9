"""Imports a sibling whose import has a side effect (untrusted: must never be imported)."""

import sentinel_sibling  # noqa: F401
import torch
from torch import nn


class NoInputs(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x)

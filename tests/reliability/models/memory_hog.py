"""Hostile: touches up to 6 GiB in 64 MiB steps, far beyond a 1500 MB memory limit.

Bounded on purpose: if the limit is not enforced, the test fails instead of taking the
shared machine down.
"""

import torch  # noqa: F401  (the inputs comment uses it)
from torch import nn

STEP = 64 * 2**20
LIMIT = 6 * 2**30


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class MemoryHog(nn.Module):
    def __init__(self):
        super().__init__()
        hoard = []
        while len(hoard) * STEP < LIMIT:
            hoard.append(b"x" * STEP)  # bytes * n writes every page: real, resident memory
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

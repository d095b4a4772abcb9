"""A module a backend only partly accepts: "Show Linalg IR" shows everything else lowered.

Linalg rejects erfinv, fft and masked_select; TOSA also roll (decomposed to slice + cat),
scatter_add and kthvalue. Each rejected op stays in place in the IR as a call to a declared
function named after it, and each bad line gets one diagnostic per backend.
"""

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.rand(4, 8) * 0.5,)
class PortingCandidate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("index", torch.zeros(4, 8, dtype=torch.long))

    def forward(self, x):
        y = self.lin(x)
        a = torch.erfinv(y)  # rejects: linalg tosa stablehlo
        f = torch.fft.fft(a).real  # rejects: linalg tosa stablehlo
        r = torch.roll(f, 1, 0)  # rejects: tosa
        s = r.scatter_add(0, self.index, r)  # rejects: tosa
        k = torch.kthvalue(s, 2, 1).values  # rejects: tosa stablehlo
        m = torch.masked_select(s, s > 0)  # rejects: linalg tosa stablehlo
        return k, m

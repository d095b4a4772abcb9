"""Modules with ops a backend rejects and a rewrite proven for it (tests of worker/rewrites/).

Each stands for a culprit the corpora measured: `erfinv` (no backend has it), a router's
`histc` (every mixture of experts), a rotary embedding's empty slice and an empty section of
its frequencies (TOSA has no zero-sized tensors).
"""

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class Gauss(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.tanh(self.lin(x))
        return torch.special.erfinv(y) * 2


# torch-mlir-lens: inputs=(torch.randn(6, 16),)
class Router(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(16, 4)

    def forward(self, x):
        top = self.gate(x).topk(2, dim=-1).indices.reshape(-1)
        counts = torch.histc(top.float(), bins=4, min=0, max=3)
        return counts / counts.sum()


# torch-mlir-lens: inputs=(torch.randn(1, 4, 16, 8),)
class PartialRotary(nn.Module):
    """A rotary embedding over the whole head: its pass-through part `t[..., n:]` is empty."""

    def forward(self, q):
        n = q.shape[-1]
        q_rot, q_pass = q[..., :n], q[..., n:]
        return q_rot.sin() * 2 + q_pass.sum(-1, keepdim=True)


# torch-mlir-lens: inputs=(torch.randn(3, 2, 8),)
class Sections(nn.Module):
    """A multimodal rotary embedding whose height section is empty (mrope_section [4, 0, 0])."""

    def forward(self, freq):
        out = freq[0]
        for dim, offset in enumerate((1, 2), start=1):
            idx = slice(offset, 0, 3)
            out[..., idx] = freq[dim, ..., idx]
        return torch.cat((out, out), dim=-1)

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


# torch-mlir-lens: inputs=(torch.randn(1, 2, 6, 7, 5),)
class Pool3d(nn.Module):
    def forward(self, x):
        values, indices = torch.nn.functional.max_pool3d(x, 3, 2, 1, return_indices=True)
        return values, indices


# torch-mlir-lens: inputs=(torch.randn(4, 6), torch.randint(0, 6, (4, 3)), torch.randn(4, 3))
class ScatterMax(nn.Module):
    def forward(self, x, index, src):
        return x.scatter_reduce(1, index, src, "amax", include_self=True)


# torch-mlir-lens: inputs=(torch.randn(4, 5), torch.randn(4, 5))
class Angles(nn.Module):
    def forward(self, y, x):
        return torch.atan2(y, x) + torch.asinh(y)


# torch-mlir-lens: inputs=(torch.rand(3, 6) + 0.5,)
class Products(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1)


class GaussLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.special.erfinv(torch.tanh(self.lin(x)) * 0.9)
        return torch.relu(y) * 0.5 + x.sigmoid() - 0.25


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class GaussStack(nn.Module):
    """Repeated layers: lowered stitched (one function per block), proven inline."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(GaussLayer() for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

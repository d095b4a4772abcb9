"""Modules whose failures once named the wrong op, the wrong call, or no line at all.

A line that some backend rejects ends with `# culprit: <backends>`. Inputs are in INPUTS;
DYNAMIC marks the inputs exported with every dimension dynamic.
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch._higher_order_ops.while_loop import while_loop


class TimestepAndUpsample(nn.Module):
    """A diffusion model's timestep embedding (a cat of computed tensors), then an upsample."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("freqs", torch.exp(-torch.arange(4, dtype=torch.float32)))

    def forward(self, t, x):
        args = t[:, None].float() * self.freqs[None, :]
        emb = torch.cat([torch.sin(args), torch.cos(args)], dim=-1)
        up = F.interpolate(x, scale_factor=2.0, mode="nearest")  # culprit: tosa stablehlo
        return emb, up


class TwoCallsOneLine(nn.Module):
    """Two calls torch-mlir rewrites, on one line: the rejected op is the interpolate's."""

    def forward(self, x):
        return F.interpolate(F.group_norm(x, 2), scale_factor=2.0)  # culprit: tosa stablehlo


class AliasedCall(nn.Module):
    """`torch.special.erfinv` is another name of `torch.erfinv`, not a decomposition."""

    def forward(self, x):
        y = torch.special.erfinv(x * 0.5)  # culprit: linalg tosa stablehlo
        return y + 1.0


class UnknownToTorchMlir(nn.Module):
    """aten.i0 is no op of torch-mlir's Torch dialect: it fails before any backend."""

    def forward(self, x):
        y = torch.special.i0(x)  # culprit: linalg tosa stablehlo
        return y + 1


class UnevenAdaptiveMaxPool(nn.Module):
    """torch-mlir's TOSA conversion of the max-pool it decomposes this into divides by zero
    (SIGFPE) when tried alone: the listing must survive it and still name the call."""

    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveMaxPool2d(output_size=(7, 13))

    def forward(self, x):
        return self.pool(x)  # culprit: linalg tosa stablehlo


class ReturnsWidth(nn.Module):
    """Returns a Python int: a constant with no location in the IR."""

    def forward(self, x):
        return x.shape[1]  # culprit: tosa


class ReturnsVerdict(nn.Module):
    """Returns a Python bool computed from sizes."""

    def forward(self, x):
        n = x.numel()
        return n > 3  # culprit: tosa


class SliceBeforeStart(nn.Module):
    """A slice whose end lies before its start: StableHLO's verifier rejects the result."""

    def forward(self, x):
        y = torch.relu(x)
        return y[:-8, -7:, :]  # culprit: tosa stablehlo


class DynamicWidth(nn.Module):
    """`x.shape[1]` of a dynamic dim: torch.export's size op carries no user frame."""

    def forward(self, x):
        return x * x.shape[1]  # culprit: tosa


class EmptyTrilinear(nn.Module):
    """torch-mlir's decomposition of `_trilinear` with an emptied dim makes a type that
    contradicts the exported one: its own pipeline fails, with no op named."""

    def forward(self, a, b, c):
        y = torch.ops.aten._trilinear(a, b, c, [0], [0], [0], [2])  # culprit: linalg tosa stablehlo
        return y


class FoldedToAnEmptyConstant(nn.Module):
    """torch-mlir folds `tril_indices(0, 0, 0)` into an empty `2x0` literal, which TOSA
    rejects: the culprit is a constant, the only thing left of the call."""

    def forward(self, x):
        return x + 1, torch.ops.aten.tril_indices(0, 0, 0)  # culprit: tosa


class CountsInAWhileLoop(nn.Module):
    """`while_loop` becomes a `torch.prim.Loop` (its condition a `Bool.Tensor`), which only
    Linalg lowers; its body, on other lines, lowers everywhere."""

    def forward(self, x):
        def cond(i, y):
            return i < 3

        def body(i, y):
            return i + 1, y * 2

        return while_loop(cond, body, (torch.tensor(0), x))  # culprit: tosa stablehlo


INPUTS = {
    "TimestepAndUpsample": lambda: (torch.tensor([3, 7]), torch.randn(2, 4, 4, 4)),
    "TwoCallsOneLine": lambda: (torch.randn(1, 4, 4, 4),),
    "AliasedCall": lambda: (torch.rand(4, 4),),
    "UnknownToTorchMlir": lambda: (torch.rand(4, 4),),
    "UnevenAdaptiveMaxPool": lambda: (torch.rand(1, 8, 10, 9),),
    "ReturnsWidth": lambda: (torch.rand(3, 4),),
    "ReturnsVerdict": lambda: (torch.rand(3, 4),),
    "SliceBeforeStart": lambda: (torch.rand(6, 4, 7),),
    "DynamicWidth": lambda: (torch.rand(3, 4),),
    "EmptyTrilinear": lambda: (torch.rand(2, 3, 4), torch.rand(2, 3, 4), torch.rand(2, 3, 4)),
    "FoldedToAnEmptyConstant": lambda: (torch.rand(3, 4),),
    "CountsInAWhileLoop": lambda: (torch.rand(3, 4),),
}
DYNAMIC = {"DynamicWidth"}

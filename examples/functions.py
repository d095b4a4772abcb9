"""Plain functions on tensors can be lowered too, once they say what they take."""

import torch
import torch.nn.functional as F


# torch-mlir-lens: inputs=(torch.randn(4, 8), torch.randn(8, 3))
def linear_gelu(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.gelu(x @ w)


# torch-mlir-lens: inputs=(torch.randn(2, 4, 16, 8), torch.randn(2, 4, 16, 8),
#     torch.randn(2, 4, 16, 8))
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Scaled dot-product attention; the inputs comment continues on a second line."""
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ v


# torch-mlir-lens: inputs={"x": torch.randn(3, 5), "eps": 1e-6}
def rms_norm(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Keyword inputs: a dict."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def helper(x: torch.Tensor) -> torch.Tensor:
    """No inputs given: not offered for lowering (but callable from the others)."""
    return x * 2

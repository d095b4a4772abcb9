"""Zero-sized tensors taken out of a program: what TOSA, which has none, needs.

A slice that selects nothing (`t[..., n:]` with n the full size, an empty section of a rotary
embedding's frequencies) is an empty tensor, and TOSA rejects every op that makes or takes one.
These entries remove the ops that consume an empty tensor without needing its values: the
empty slice is then used by nothing and torch.export drops it. Each entry returns
`NotImplemented` (the op is kept) unless an operand is statically empty.

Plain PyTorch importing only `torch`; copied as is into the user's export code.
"""

from __future__ import annotations

import torch


def _empty(t: torch.Tensor) -> bool:
    """Statically zero-sized (a dynamic size is never taken for zero)."""
    return any(isinstance(s, int) and s == 0 for s in t.shape)


def cat_without_empty(tensors: list[torch.Tensor], dim: int = 0) -> torch.Tensor:
    """`torch.cat` of the operands that are not empty. Exact."""
    kept = [t for t in tensors if not _empty(t)]
    if len(kept) == len(tensors) or not kept:
        return NotImplemented
    if len(kept) == 1:
        return kept[0].clone()
    return torch.cat(kept, dim)


def slice_scatter_of_empty(input: torch.Tensor, src: torch.Tensor, dim: int = 0,
                           start: int | None = None, end: int | None = None,
                           step: int = 1) -> torch.Tensor:
    """`torch.slice_scatter` of an empty `src`: nothing is written, `input` comes back.
    Exact."""
    if not _empty(src):
        return NotImplemented
    return input.clone()


def sum_of_empty(input: torch.Tensor, dim: list[int] | None = None, keepdim: bool = False,
                 *, dtype: torch.dtype | None = None) -> torch.Tensor:
    """`torch.sum` over an empty dimension: zeros of the result's shape. Exact."""
    if not _empty(input) or dim is None:
        return NotImplemented
    rank = input.dim()
    dims = {d % rank for d in dim} if dim else set(range(rank))
    if not any(input.shape[d] == 0 for d in dims):
        return NotImplemented
    shape = [1 if d in dims else s for d, s in enumerate(input.shape)] if keepdim else \
        [s for d, s in enumerate(input.shape) if d not in dims]
    if any(s == 0 for s in shape):
        return NotImplemented  # the result is empty too
    return torch.zeros(shape, dtype=dtype or input.dtype)

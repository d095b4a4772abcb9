"""Sorting and selection by comparisons: every element compared with every other.

TOSA has no sort; these compute each element's rank by counting comparisons and place it with
a one-hot sum, which every backend lowers. Cost: n² comparisons per row (a mixture of experts
sorts tokens × top-k expert ids: 16 in a tiny model, a few thousand in a real one).

Plain PyTorch importing only `torch`; copied as is into the user's export code.
"""

from __future__ import annotations

import torch


def _ranks(x: torch.Tensor, descending: bool) -> torch.Tensor:
    """Each element's place in its last-dim row, ties broken by position (a stable order)."""
    n = x.shape[-1]
    a = x.unsqueeze(-1)  # [..., n, 1]: the element
    b = x.unsqueeze(-2)  # [..., 1, n]: every other one
    before = (b > a) if descending else (b < a)
    if x.dtype.is_floating_point:  # NaN sorts last ascending, first descending, as torch does
        a_nan, b_nan = torch.isnan(a), torch.isnan(b)
        before = (before & ~b_nan) | (b_nan & ~a_nan) if descending else \
            (before & ~a_nan) | (a_nan & ~b_nan)
        same = (b == a) | (a_nan & b_nan)
    else:
        same = b == a
    position = torch.arange(n)
    earlier = position.unsqueeze(0) < position.unsqueeze(-1)  # [n, n]: j < i
    return (before | (same & earlier)).sum(dim=-1)


def sort_by_ranks(self: torch.Tensor, dim: int = -1,
                  descending: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """`torch.sort(self, dim, descending)` from comparisons and one-hot sums.

    Method: an element's rank is the number of elements that sort before it (smaller, or
    larger when descending; NaN last ascending and first descending, as torch sorts them),
    plus the equal ones before it in the row; the index at each rank is a one-hot sum, the
    value a gather of it. Exact (no arithmetic on the values). Ties come out in position order, as
    `torch.sort(stable=True)` gives them, and as torch's default sort does for short rows;
    on long rows with ties torch may order them otherwise, and the proof then refuses it.
    """
    rank = self.dim()
    if rank == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64)
    d = dim % rank
    x = self.movedim(d, -1)
    n = x.shape[-1]
    ranks = _ranks(x, descending)  # [..., n]
    places = torch.arange(n)
    one_hot = ranks.unsqueeze(-2) == places.unsqueeze(-1)  # [..., place, element]
    indices = (one_hot.to(torch.int64) * places).sum(-1)
    values = torch.gather(x, -1, indices)  # the values themselves: -0.0 and NaN kept
    return values.movedim(-1, d), indices.movedim(-1, d)


def sort_stable_by_ranks(self: torch.Tensor, *, stable: bool | None = None, dim: int = -1,
                         descending: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """`torch.sort(self, stable=..., dim, descending)`: `sort_by_ranks`, whose order is
    stable."""
    return sort_by_ranks(self, dim, descending)


def kthvalue_by_ranks(self: torch.Tensor, k: int, dim: int = -1,
                      keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """`torch.kthvalue(self, k, dim, keepdim)`: the element of rank k-1 (ranks as
    `sort_by_ranks` counts them) and its index. Exact; among equal values the first in
    position is taken (torch's choice among ties is its own)."""
    d = dim % max(self.dim(), 1)
    x = self.movedim(d, -1)
    at = (_ranks(x, False) == k - 1).to(torch.int64).argmax(dim=-1, keepdim=True)
    values, indices = torch.gather(x, -1, at), at
    if not keepdim:
        return values.squeeze(-1), indices.squeeze(-1)
    return values.movedim(-1, d), indices.movedim(-1, d)


def cumprod_in_order(self: torch.Tensor, dim: int, *,
                     dtype: torch.dtype | None = None) -> torch.Tensor:
    """`torch.cumprod(self, dim)` as a running product taken in order, one slice at a time,
    in the accumulator PyTorch's CPU kernel uses (float64 for float32, float32 for float16
    and bfloat16) and rounded to the result's dtype: the same values, the same overflows.
    Exact. Integers and booleans give int64 unless `dtype` says otherwise, as torch does.
    Rows longer than 512 are left to the op (the unrolled products would be too many)."""
    out_dtype = dtype or (self.dtype if self.dtype.is_floating_point or self.dtype.is_complex
                          else torch.int64)
    wide = {torch.float32: torch.float64, torch.float16: torch.float32,
            torch.bfloat16: torch.float32}.get(out_dtype, out_dtype)
    x = self.to(wide)
    n = x.shape[dim]
    if n > 512:
        return NotImplemented
    parts = [x.narrow(dim, 0, 1)]
    for i in range(1, n):
        parts.append(parts[-1] * x.narrow(dim, i, 1))
    return (torch.cat(parts, dim) if parts else x).to(out_dtype)

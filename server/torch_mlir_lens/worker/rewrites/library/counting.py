"""Counting ops (histograms) in comparisons and sums, which every backend has.

Plain PyTorch importing only `torch`; copied as is into the user's export code.
"""

from __future__ import annotations

import torch


def histc_by_comparison(input: torch.Tensor, bins: int = 100, min: float = 0,
                        max: float = 0) -> torch.Tensor:
    """`torch.histc(input, bins, min, max)` as a sum of one-hot comparisons.

    Method: each element's bin is floor((x - min) * bins / (max - min)), computed in the
    input's dtype in that order as PyTorch's CPU kernel does; an element equal to `max` goes
    to the last bin; elements outside [min, max] (NaN and infinities among them) count
    nowhere. With min == max the data's own smallest and largest values are the range (one
    wider on each side when they are equal), as torch.histc does. Exact: counts of an
    element's bin are whole numbers, the bin of each element is PyTorch's own formula.
    Cost: a comparison per element and bin (a mixture of experts' router: tokens × top-k ×
    experts).
    """
    x = input.reshape(-1)
    if min == max:  # the data's own range
        lo = torch.amin(x)
        hi = torch.amax(x)
        same = lo == hi
        lo = torch.where(same, lo - 1, lo)
        hi = torch.where(same, hi + 1, hi)
    else:
        lo = torch.full((), min, dtype=x.dtype)
        hi = torch.full((), max, dtype=x.dtype)
    position = torch.floor((x - lo) * bins / (hi - lo))
    position = torch.where(x == hi, torch.full_like(position, bins - 1), position)
    inside = (x >= lo) & (x <= hi)
    edges = torch.arange(bins, dtype=x.dtype)
    hits = (position[:, None] == edges[None, :]) & inside[:, None]
    return hits.to(input.dtype).sum(dim=0)

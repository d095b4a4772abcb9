"""Scatters as one-hot comparisons and reductions, which every backend has.

Each target position is compared with every index (one-hot), and the values aimed at it are
reduced there: a sum, a product, a maximum... Cost: targets × indices along the scattered dim.

Plain PyTorch importing only `math` and `torch`; copied as is into the user's export code.
"""

from __future__ import annotations

import math

import torch


def _extreme(dtype: torch.dtype, low: bool) -> float:
    if dtype.is_floating_point:
        return -math.inf if low else math.inf
    info = torch.iinfo(dtype)
    return float(info.min if low else info.max)


def scatter_reduce_by_one_hot(self: torch.Tensor, dim: int, index: torch.Tensor,
                              src: torch.Tensor, reduce: str,
                              include_self: bool = True) -> torch.Tensor:
    """`Tensor.scatter_reduce(dim, index, src, reduce, include_self)`.

    Method: along `dim` (moved last), match[..., t, i] = index[..., i] == t; the values of src
    matched to a target are reduced (sum, prod, mean, amax, amin), then combined with self's
    value there when `include_self`; targets nothing is aimed at keep self's (an index
    smaller than self in the other dims is padded with -1, which matches nothing). Error:
    float rounding of sums and products taken in another order, so the dtype's largest
    values are outside its domain (partial sums overflow elsewhere); means of integers round
    toward minus infinity as torch's do.
    """
    d = dim % self.dim()
    if index.dim() != self.dim() or any(
            index.shape[i] > self.shape[i] for i in range(self.dim()) if i != d):
        return NotImplemented
    for i in range(self.dim()):  # src as large as index; then both as large as self
        src = src.narrow(i, 0, index.shape[i])
    pads: list[int] = []
    for i in reversed(range(self.dim())):
        pads += [0, 0 if i == d else self.shape[i] - index.shape[i]]
    if any(pads):  # positions index does not reach: an index nothing matches (-1)
        index = torch.nn.functional.pad(index, pads, value=-1)
        src = torch.nn.functional.pad(src, pads, value=0)
    x = self.movedim(d, -1)
    idx = index.movedim(d, -1)
    s = src.movedim(d, -1).to(self.dtype)
    targets = torch.arange(x.shape[-1])
    match = idx.unsqueeze(-2) == targets.unsqueeze(-1)  # [..., T, I]
    count = match.to(torch.int64).sum(-1)
    hit = count > 0
    vals = s.unsqueeze(-2)
    if reduce in ("sum", "mean"):
        total = torch.where(match, vals, torch.zeros((), dtype=x.dtype)).sum(-1)
        if include_self:
            total = total + x
            count = count + 1
        if reduce == "sum":
            out = total
        elif x.dtype.is_floating_point:
            out = total / count.to(x.dtype)
        else:
            out = torch.div(total, count, rounding_mode="floor").to(x.dtype)
    elif reduce == "prod":
        out = torch.where(match, vals, torch.ones((), dtype=x.dtype)).prod(-1)
        if include_self:
            out = out * x
    elif reduce in ("amax", "amin"):
        low = reduce == "amax"
        filler = torch.full((), _extreme(x.dtype, low), dtype=x.dtype)
        picked = torch.where(match, vals, filler)
        out = picked.amax(-1) if low else picked.amin(-1)
        if include_self:
            out = torch.maximum(out, x) if low else torch.minimum(out, x)
    else:
        return NotImplemented
    return torch.where(hit, out.to(x.dtype), x).movedim(-1, d)


def scatter_add_by_one_hot(self: torch.Tensor, dim: int, index: torch.Tensor,
                           src: torch.Tensor) -> torch.Tensor:
    """`Tensor.scatter_add(dim, index, src)`: `scatter_reduce_by_one_hot` with "sum"."""
    return scatter_reduce_by_one_hot(self, dim, index, src, "sum", True)


def index_put_impl_by_one_hot(self: torch.Tensor, indices: list[torch.Tensor | None],
                              values: torch.Tensor, accumulate: bool = False,
                              unsafe: bool = False) -> torch.Tensor:
    """`aten._index_put_impl` (what `index_put_` calls): `index_put_by_one_hot`."""
    return index_put_by_one_hot(self, indices, values, accumulate)


def index_put_by_one_hot(self: torch.Tensor, indices: list[torch.Tensor | None],
                         values: torch.Tensor, accumulate: bool = False) -> torch.Tensor:
    """`self.index_put(indices, values, accumulate)` for integer indices of the leading dims.

    Method: the indexed dims flattened into one, each index tensor's entries made one flat
    position; each target position compared with every one (one-hot): with `accumulate` the
    values aimed at it are summed onto it, else the last one aimed at it is written. Boolean
    masks and indices after a skipped dim are left to the op. Error: float rounding of the
    accumulated sum (another order).
    """
    given = [i for i in indices if i is not None]
    if not indices or len(given) != len(indices) or any(i.dtype == torch.bool for i in given):
        return NotImplemented
    lead = len(given)
    sizes = list(self.shape[:lead])
    flat_index = torch.zeros((), dtype=torch.int64)
    for i, size in zip(given, sizes, strict=True):
        flat_index = flat_index * size + torch.where(i < 0, i + size, i).to(torch.int64)
    flat_index = flat_index.reshape(-1)  # [I]
    rest = list(self.shape[lead:])
    x = self.reshape([-1, *rest])  # [T, *rest]
    v = values.to(self.dtype).broadcast_to([flat_index.shape[0], *rest])
    targets = torch.arange(x.shape[0])
    match = targets.unsqueeze(-1) == flat_index.unsqueeze(0)  # [T, I]
    shaped = match.reshape([*match.shape, *([1] * len(rest))])
    if accumulate:
        added = torch.where(shaped, v.unsqueeze(0), torch.zeros((), dtype=x.dtype)).sum(1)
        return (x + added).reshape(self.shape)
    order = torch.arange(flat_index.shape[0])
    last = torch.where(match, order.unsqueeze(0), torch.full((), -1)).amax(-1)  # [T]
    written = v.index_select(0, last.clamp(min=0))
    keep = (last < 0).reshape([-1, *([1] * len(rest))])
    return torch.where(keep, x, written).reshape(self.shape)

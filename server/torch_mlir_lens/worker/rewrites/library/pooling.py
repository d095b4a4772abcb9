"""Pooling as gathers of windows and reductions, which every backend has.

The backends reject pooling beyond their plain cases: 3-d max pooling with indices, ceil mode,
dilation, adaptive windows. Here each window's elements are gathered along each spatial dim
with a constant index table (`index_select`), then reduced: max (with the index of the maximum
in the input, as PyTorch returns it) or sum divided by the window's count. Exact for max and
for the indices; averages add the window in another order than PyTorch (float rounding only).

Plain PyTorch importing only `math` and `torch`; copied as is into the user's export code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def _spec(value: Sequence[int] | int, n: int) -> list[int]:
    values = [value] if isinstance(value, int) else list(value)
    return values * n if len(values) == 1 else values


def _out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output size (pooling_output_shape)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside
        out -= 1
    return out


def _gather(x: torch.Tensor, dim: int, table: tuple[list[int], int, int, int, list[int]],
            fill: float) -> torch.Tensor:
    """x with `dim` replaced by (windows, positions): position j of window o reads element
    start[o] + j·step of dim, or `fill` at or past its window's end and outside the dim.
    `table` is (start, width, step, size, ends) in plain numbers; the index tensor is made of
    `arange`s (a tensor made from a list would not trace as a constant)."""
    starts, width, step, size, ends = table
    n = len(starts)
    first = min(starts)
    last = max(s + (width - 1) * step for s in starts)
    left, right = max(0, -first), max(0, last - size + 1) + 1  # + 1: a cell for `fill`
    pad = [0, 0] * (x.dim() - 1 - dim) + [left, right]
    x = torch.nn.functional.pad(x, pad, value=fill)
    start = _affine(starts)
    idx = start.unsqueeze(-1) + torch.arange(width).unsqueeze(0) * step
    end = _affine(ends).unsqueeze(-1)
    idx = torch.where(idx < end, idx, torch.full((), size)) + left
    idx = torch.where(idx < left + size, idx, torch.full((), left + size + right - 1))
    picked = x.index_select(dim, idx.reshape(-1))
    shape = list(x.shape)
    shape[dim:dim + 1] = [n, width]
    return picked.reshape(shape)


def _affine(values: list[int]) -> torch.Tensor:
    """The int64 tensor of `values` from `arange` (values an arithmetic progression), else
    from a sum of one-hot ramps (the adaptive windows' starts)."""
    n = len(values)
    if n == 1:
        return torch.zeros(1, dtype=torch.int64) + values[0]
    step = values[1] - values[0]
    if all(values[i + 1] - values[i] == step for i in range(n - 1)):
        return torch.arange(n) * step + values[0]
    positions = torch.arange(n)
    out = torch.zeros(n, dtype=torch.int64) + values[0]
    for i in range(1, n):  # a step up at each place the progression changes
        jump = values[i] - values[i - 1] - step
        if jump:
            out = out + (positions >= i).to(torch.int64) * jump
    return out + positions * step


Table = tuple[list[int], int, int, int, list[int]]  # starts, width, step, size, ends


def _windows(x: torch.Tensor, tables: list[Table], fill: float) -> torch.Tensor:
    """[..., *outs, K]: every window's elements, the spatial dims being the last ones."""
    n = len(tables)
    lead = x.dim() - n
    for i, table in enumerate(tables):
        x = _gather(x, lead + 2 * i, table, fill)  # each earlier dim became two
    order = list(range(lead)) + [lead + 2 * i for i in range(n)] + [lead + 2 * i + 1
                                                                     for i in range(n)]
    x = x.permute(order)
    return x.reshape(*x.shape[:lead + n], -1)


def _lowest(dtype: torch.dtype) -> float:
    return -math.inf if dtype.is_floating_point else float(torch.iinfo(dtype).min)


def _positions(tables: list[Table]) -> tuple[torch.Tensor, torch.Tensor]:
    """[*outs, K]: each window position's flat index in the input's spatial dims, and
    whether it is inside the input and its window (padding and window ends are not)."""
    flat = torch.zeros([], dtype=torch.int64)
    inside = torch.ones([], dtype=torch.bool)
    for starts, width, step, size, ends in tables:
        idx = _affine(starts).unsqueeze(-1) + torch.arange(width).unsqueeze(0) * step
        ok = (idx >= 0) & (idx < size) & (idx < _affine(ends).unsqueeze(-1))
        flat = flat.unsqueeze(-1).unsqueeze(-1) * size + idx
        inside = inside.unsqueeze(-1).unsqueeze(-1) & ok
    n = len(tables)
    order = [2 * i for i in range(n)] + [2 * i + 1 for i in range(n)]
    outs = [len(t[0]) for t in tables]
    return flat.permute(order).reshape(*outs, -1), inside.permute(order).reshape(*outs, -1)


def _max_and_index(x: torch.Tensor, tables: list[Table]) -> tuple[torch.Tensor, torch.Tensor]:
    """The maximum of each window and its index in the input's spatial dims (flattened), as
    PyTorch picks it: the first maximum, or the last NaN when the window has one."""
    values = _windows(x, tables, _lowest(x.dtype))
    best = values.amax(dim=-1)
    k = values.shape[-1]
    positions, inside = _positions(tables)
    hit = (values == best.unsqueeze(-1)) & inside
    first = hit.to(torch.int64).argmax(dim=-1)
    if x.dtype.is_floating_point:
        nan = torch.isnan(values)
        last_nan = k - 1 - nan.flip(-1).to(torch.int64).argmax(dim=-1)
        first = torch.where(nan.any(dim=-1), last_nan, first)
    index = positions.expand(*best.shape, k).gather(-1, first.unsqueeze(-1)).squeeze(-1)
    return best, index


def _pool_tables(sizes: list[int], kernel: list[int], stride: list[int], padding: list[int],
                 dilation: list[int], ceil_mode: bool) -> list[Table]:
    tables = []
    for size, k, s, p, d in zip(sizes, kernel, stride, padding, dilation, strict=True):
        out = _out_size(size, k, s, p, d, ceil_mode)
        starts = [o * s - p for o in range(out)]
        tables.append((starts, k, d, size, [st + (k - 1) * d + 1 for st in starts]))
    return tables


def _max_pool(self: torch.Tensor, n: int, kernel_size: Sequence[int], stride: Sequence[int],
              padding: Sequence[int], dilation: Sequence[int],
              ceil_mode: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Max pooling over the last `n` dims by gathering windows.

    Method: per spatial dim, a constant table of each window's input positions (stride,
    padding, dilation, ceil mode as PyTorch sizes them); the windows gathered (padding reads
    -inf), their maximum taken, and its position in the input flattened over the spatial dims
    (the first maximum, or the last NaN of a window that has one, as PyTorch's CPU kernel).
    Exact: no arithmetic on the values.
    """
    kernel = _spec(kernel_size, n)
    strides = _spec(stride, n) if stride else kernel
    sizes = list(self.shape[-n:])
    tables = _pool_tables(sizes, kernel, strides, _spec(padding, n), _spec(dilation, n),
                          ceil_mode)
    return _max_and_index(self, tables)


def max_pool2d_by_gather(self: torch.Tensor, kernel_size: list[int], stride: Sequence[int] = (),
                         padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,),
                         ceil_mode: bool = False) -> torch.Tensor:
    """`F.max_pool2d` by gathering windows (`_max_pool`). Exact."""
    return _max_pool(self, 2, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool3d_by_gather(self: torch.Tensor, kernel_size: list[int], stride: Sequence[int] = (),
                         padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,),
                         ceil_mode: bool = False) -> torch.Tensor:
    """`F.max_pool3d` by gathering windows (`_max_pool`). Exact."""
    return _max_pool(self, 3, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool2d_with_indices_by_gather(
        self: torch.Tensor, kernel_size: list[int], stride: Sequence[int] = (),
        padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,),
        ceil_mode: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """`F.max_pool2d(return_indices=True)` by gathering windows (`_max_pool`). Exact."""
    return _max_pool(self, 2, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices_by_gather(
        self: torch.Tensor, kernel_size: list[int], stride: Sequence[int] = (),
        padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,),
        ceil_mode: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """`F.max_pool3d(return_indices=True)` by gathering windows (`_max_pool`). Exact."""
    return _max_pool(self, 3, kernel_size, stride, padding, dilation, ceil_mode)


def _avg_pool(self: torch.Tensor, n: int, kernel_size: Sequence[int], stride: Sequence[int],
              padding: Sequence[int], ceil_mode: bool, count_include_pad: bool,
              divisor_override: int | None) -> torch.Tensor:
    """Average pooling over the last `n` dims by gathering windows.

    Method: windows gathered as for max pooling (padding reads 0) and summed; the divisor is
    PyTorch's: `divisor_override`, else the window's extent within the padded input
    (`count_include_pad`) or within the input. Error: float rounding of the sum (another
    order than PyTorch's loop).
    """
    kernel = _spec(kernel_size, n)
    strides = _spec(stride, n) if stride else kernel
    pads = _spec(padding, n)
    sizes = list(self.shape[-n:])
    tables = _pool_tables(sizes, kernel, strides, pads, [1] * n, ceil_mode)
    total = _windows(self, tables, 0.0).sum(dim=-1)
    if divisor_override:
        return total / divisor_override
    counts = torch.ones([], dtype=self.dtype)
    for (starts, width, _step, size, _ends), p in zip(tables, pads, strict=True):
        start = _affine(starts)
        if count_include_pad:
            per = torch.clamp(start + width, max=size + p) - start
        else:
            per = torch.clamp(start + width, max=size) - torch.clamp(start, min=0)
        counts = counts.unsqueeze(-1) * per.to(self.dtype)
    return total / counts


def avg_pool2d_by_gather(self: torch.Tensor, kernel_size: list[int], stride: Sequence[int] = (),
                         padding: Sequence[int] = (0,), ceil_mode: bool = False,
                         count_include_pad: bool = True,
                         divisor_override: int | None = None) -> torch.Tensor:
    """`F.avg_pool2d` by gathering windows (`_avg_pool`)."""
    return _avg_pool(self, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d_by_gather(self: torch.Tensor, kernel_size: list[int], stride: Sequence[int] = (),
                         padding: Sequence[int] = (0,), ceil_mode: bool = False,
                         count_include_pad: bool = True,
                         divisor_override: int | None = None) -> torch.Tensor:
    """`F.avg_pool3d` by gathering windows (`_avg_pool`)."""
    return _avg_pool(self, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_tables(sizes: list[int], outs: list[int]) -> list[Table]:
    """Each output's window, PyTorch's: start floor(o·L/O), end ceil((o+1)·L/O); all as wide
    as the widest, the positions past a window's end reading the fill."""
    tables = []
    for size, out in zip(sizes, outs, strict=True):
        starts = [(o * size) // out for o in range(out)]
        ends = [-(-((o + 1) * size) // out) for o in range(out)]
        width = max(e - s for s, e in zip(starts, ends, strict=True))
        tables.append((starts, width, 1, size, ends))
    return tables


def adaptive_max_pool_by_gather(self: torch.Tensor,
                                output_size: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """`adaptive_max_pool1d/2d/3d` (values and indices) by gathering each output's window.

    Method: PyTorch's windows (start floor(o·L/O), end ceil((o+1)·L/O)), as wide as the
    widest (the rest reading -inf), then as `_max_pool`. Exact.
    """
    n = len(output_size)
    tables = _adaptive_tables(list(self.shape[-n:]), list(output_size))
    return _max_and_index(self, tables)


def adaptive_avg_pool_by_gather(self: torch.Tensor, output_size: list[int]) -> torch.Tensor:
    """`adaptive_avg_pool1d/2d/3d` by gathering each output's window: its sum divided by its
    length (PyTorch's windows). Error: float rounding of the sum."""
    n = len(output_size)
    tables = _adaptive_tables(list(self.shape[-n:]), list(output_size))
    total = _windows(self, tables, 0.0).sum(dim=-1)
    counts = torch.ones([], dtype=self.dtype)
    for starts, _width, _step, _size, ends in tables:
        per = _affine(ends) - _affine(starts)
        counts = counts.unsqueeze(-1) * per.to(self.dtype)
    return total / counts

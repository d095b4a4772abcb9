"""Data movement in static slices and concatenations, which every backend has.

torch-mlir decomposes `torch.roll` into slices whose sizes it no longer knows (dynamic), which
TOSA rejects; torch's own decomposition goes through `fmod` of indices, which TOSA rejects too.

Plain PyTorch importing only `torch`; copied as is into the user's export code.
"""

from __future__ import annotations

import torch


def roll_by_slices(self: torch.Tensor, shifts: list[int], dims: list[int] | None = None,
                   ) -> torch.Tensor:
    """`torch.roll(self, shifts, dims)` as two static slices put back together per dim.

    Method: along each dim of size n a shift s (taken modulo n) moves the last s elements
    to the front: `cat(x[n-s:], x[:n-s])`. Without dims the flattened tensor is rolled and
    reshaped back, as torch.roll does. Exact (no arithmetic on the values).
    """
    if not dims:
        return roll_by_slices(self.reshape(-1), [shifts[0]], [0]).reshape(self.shape)
    out = self
    for shift, dim in zip(shifts, dims, strict=True):
        n = out.shape[dim]
        s = shift % n if n else 0
        if s:
            out = torch.cat((out.narrow(dim, n - s, s), out.narrow(dim, 0, n - s)), dim)
    return out if out is not self else self.clone()


def _nearest_index(out_size: int, in_size: int, scale: float | None) -> torch.Tensor:
    """PyTorch's nearest source index of each output position: floor(o · s) in float32, s the
    given scale's inverse or in/out, capped at the last input (upsampling's `nearest_idx`)."""
    if out_size == in_size:
        return torch.arange(out_size)
    if out_size == 2 * in_size and scale is None:
        return torch.div(torch.arange(out_size), 2, rounding_mode="floor")
    ratio = torch.full((), 1.0 / scale if scale else 0.0, dtype=torch.float32) if scale \
        else torch.full((), float(in_size), dtype=torch.float32) / out_size
    src = torch.floor(torch.arange(out_size).to(torch.float32) * ratio).to(torch.int64)
    return torch.clamp(src, max=in_size - 1)


def upsample_nearest2d_by_gather(self: torch.Tensor, output_size: list[int],
                                 scales_h: float | None = None,
                                 scales_w: float | None = None) -> torch.Tensor:
    """`F.interpolate(mode="nearest")` of the last two dims: each output reads the input at
    PyTorch's nearest index (float32 arithmetic, as its kernel), by two gathers. Exact."""
    h, w = self.shape[-2], self.shape[-1]
    rows = _nearest_index(output_size[0], h, scales_h)
    cols = _nearest_index(output_size[1], w, scales_w)
    return self.index_select(-2, rows).index_select(-1, cols)


def upsample_nearest2d_vec_by_gather(input: torch.Tensor, output_size: list[int] | None,
                                     scale_factors: list[float] | None) -> torch.Tensor:
    """`aten.upsample_nearest2d.vec`: the output size from the scale factors (floor(in·s),
    as torch computes it), then `upsample_nearest2d_by_gather`. Exact."""
    h, w = input.shape[-2], input.shape[-1]
    if output_size is not None:
        return upsample_nearest2d_by_gather(input, list(output_size))
    if scale_factors is None:
        return NotImplemented
    size = [int(h * scale_factors[0]), int(w * scale_factors[1])]
    return upsample_nearest2d_by_gather(input, size, scale_factors[0], scale_factors[1])

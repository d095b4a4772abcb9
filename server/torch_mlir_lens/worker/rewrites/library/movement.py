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

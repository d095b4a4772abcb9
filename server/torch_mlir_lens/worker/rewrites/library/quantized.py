"""Per-channel (de)quantization in elementwise arithmetic, which every backend has.

torch-mlir knows `quantized_decomposed`'s per-tensor ops, not its per-channel ones. These are
their definitions (torch/ao/quantization/fx/_decomposed.py), each channel's scale and zero
point broadcast along its axis: the same arithmetic, so exact.

Plain PyTorch importing only `torch`; copied as is into the user's export code.
"""

from __future__ import annotations

import torch


def _along(t: torch.Tensor, rank: int, axis: int) -> torch.Tensor:
    shape = [1] * rank
    shape[axis] = t.shape[0]
    return t.reshape(shape)


def dequantize_per_channel_by_scale(input: torch.Tensor, scales: torch.Tensor,
                                    zero_points: torch.Tensor | None, axis: int,
                                    quant_min: int, quant_max: int, dtype: torch.dtype, *,
                                    out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """`quantized_decomposed.dequantize_per_channel`: (q - zero point) · scale per channel,
    in the dtype torch's definition computes it in, then `out_dtype` (float32). Exact."""
    rank = input.dim()
    scale = _along(scales, rank, axis)
    res = (input - _along(zero_points, rank, axis)) * scale if zero_points is not None \
        else input * scale
    return res.to(out_dtype or torch.float32)


def quantize_per_channel_by_scale(input: torch.Tensor, scales: torch.Tensor,
                                  zero_points: torch.Tensor, axis: int, quant_min: int,
                                  quant_max: int, dtype: torch.dtype) -> torch.Tensor:
    """`quantized_decomposed.quantize_per_channel`: clamp(round(x · (1 / scale)) + zero point)
    per channel, as torch's definition (round half to even). Exact."""
    x = input.to(torch.float32) if input.dtype in (torch.float16, torch.bfloat16) else input
    rank = x.dim()
    res = torch.clamp(torch.round(x * (1.0 / _along(scales, rank, axis)))
                      + _along(zero_points, rank, axis), quant_min, quant_max)
    return res.to(dtype)

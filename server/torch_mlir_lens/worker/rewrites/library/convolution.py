"""Convolutions the backends take, made of those they do not: a grouped one as one
convolution per group.

Plain PyTorch importing only `torch`; copied as is into the user's export code.
"""

from __future__ import annotations

import torch


def convolution_per_group(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                          stride: list[int], padding: list[int], dilation: list[int],
                          transposed: bool, output_padding: list[int],
                          groups: int) -> torch.Tensor:
    """`aten.convolution` with groups > 1 as `groups` convolutions of one group each, whose
    outputs are concatenated along the channels. The same arithmetic per output element as
    the grouped convolution (each sums over its own group's channels): float rounding only.
    A convolution of one group is left as it is."""
    if groups == 1:
        return NotImplemented
    inputs = input.chunk(groups, dim=1)
    weights = weight.chunk(groups, dim=0)
    biases = bias.chunk(groups) if bias is not None else [None] * groups
    outs = [torch.ops.aten.convolution.default(x, w, b, stride, padding, dilation, transposed,
                                               output_padding, 1)
            for x, w, b in zip(inputs, weights, biases, strict=True)]
    return torch.cat(outs, dim=1)

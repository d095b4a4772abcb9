"""A small ResNet-style network built from blocks defined in the sibling file layers.py.

The sibling import works because the file's folder is importable when it is loaded; the MLIR of
`TinyResNet` maps ops both to lines here and to lines in layers.py.
"""

import torch
from layers import ConvBNReLU, ResidualBlock
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(1, 3, 16, 16),)
class TinyResNet(nn.Module):
    def __init__(self, width: int = 8, num_classes: int = 10) -> None:
        super().__init__()
        self.stem = ConvBNReLU(3, width)
        self.stage = nn.Sequential(ResidualBlock(width), ResidualBlock(width))
        self.head = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stage(self.stem(x))
        x = x.mean(dim=(2, 3))  # global average pooling
        return self.head(x)


class WideResNet(ResidualBlock):
    """A subclass of an imported block: still found as a module (through layers.py)."""

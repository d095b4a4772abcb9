"""Modules whose constructors need arguments: say them with an `init=` comment."""

import torch
import torch.nn as nn


# torch-mlir-lens: inputs=(torch.randn(4, 12),)
# torch-mlir-lens: init=(12, 3)
class Classifier(nn.Module):
    """A linear classifier whose sizes must be given: no defaults."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(in_features)
        self.fc = nn.Linear(in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(x)).log_softmax(dim=-1)


# Keyword arguments work too (a dict), and both keys may share one line separated by `;`.
# torch-mlir-lens: inputs=(torch.randn(2, 8, 10),); init={"channels": 8, "scale": 0.5}
class ScaledResidual(nn.Module):
    def __init__(self, channels: int, *, scale: float) -> None:
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size=3, padding=1)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.scale * self.conv(x)

"""A module without example inputs: the server offers a quick fix that adds them."""

import torch
import torch.nn as nn


class Mixer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(x)) * scale.sum()

"""Modules without any inputs annotation: the first layer says enough to guess an input.

Torch-MLIR Lens reports these inputs as "inferred" (a small tensor of the fitting shape). Add a
`# torch-mlir-lens: inputs=...` comment when the guess is not what you want.
"""

import torch
import torch.nn as nn


class LinearHead(nn.Module):
    """First layer Linear(20, 5): inferred input torch.randn(2, 20)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(20, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc(x), dim=-1)


class ConvEncoder(nn.Module):
    """First layer Conv2d with 1 input channel: inferred input torch.randn(1, 1, 32, 32)."""

    def __init__(self, channels: int = 1) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(channels, 4, kernel_size=3, stride=2),
            nn.ReLU(),
            nn.Conv2d(4, 8, kernel_size=3, stride=2),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.features(x).flatten(1)


class BagOfWords(nn.Module):
    """First layer Embedding(500, 16): inferred token ids, torch.randint(0, 500, (2, 8))."""

    def __init__(self, vocab: int = 500, dim: int = 16) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(self.emb(tokens).mean(dim=1))


class NeedsTwoInputs(nn.Module):
    """Two tensor inputs: nothing to infer, so Torch-MLIR Lens asks for a comment."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.fc(x) + y

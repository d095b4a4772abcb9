"""A small multi-layer perceptron: the "hello world" of Torch-MLIR Lens.

Open this file in VS Code (or run `torch-mlir-lens lower examples/mlp.py --module MLP`) to see
each line of `forward` next to the Linalg it becomes.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


# torch-mlir-lens: inputs=(torch.randn(2, 16),)
class MLP(nn.Module):
    """Two hidden layers with ReLU, then a linear read-out."""

    def __init__(self, in_features: int = 16, hidden: int = 32, out_features: int = 4) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.head(x)

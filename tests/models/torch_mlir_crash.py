"""A module whose Linalg lowering crashes torch-mlir 20261001 itself (not a Python error).

Viewing an empty tensor: the legacy `ConvertAtenViewOp` (TorchToLinalg, DataMovement.cpp)
divides by the product of the dims, zero here, and the process dies with SIGFPE. Plain
`fx.export_and_import(..., output_type="linalg-on-tensors")` ends the interpreter on it.
"""

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class EmptyTail(nn.Module):
    def forward(self, x):
        tail = x[:, 8:]
        folded = tail.reshape(2, 1, 0)  # the view torch-mlir crashes on
        return torch.relu(x), folded

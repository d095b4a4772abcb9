"""Torch-MLIR Lens: what a PyTorch module becomes in MLIR, line by line."""

__version__ = "0.1.0"

"""The worker side of Torch-MLIR Lens: the only package that imports torch and torch-mlir."""

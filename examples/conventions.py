"""Example inputs given the ways PyTorch code already does it: no lens comment needed.

Each module below uses one convention; Torch-MLIR Lens reports which one it used.
"""

import torch
import torch.nn as nn

try:
    # The decorator of torch-mlir's e2e test suite. Outside that suite it is usually not
    # installed, so fall back to a no-op: Torch-MLIR Lens reads its argument from the source.
    from torch_mlir_e2e_test.annotations import annotate_args, export
except ImportError:
    def annotate_args(annotations):
        def decorate(fn):
            return fn
        return decorate

    def export(fn):
        return fn


class LitAutoEncoder(nn.Module):
    """PyTorch Lightning style: an `example_input_array` set in the constructor."""

    def __init__(self, features: int = 28 * 28, code: int = 8) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, code))
        self.decoder = nn.Sequential(nn.Linear(code, 64), nn.ReLU(), nn.Linear(64, features))
        self.example_input_array = torch.rand(2, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


class Gate(nn.Module):
    """An `example_inputs()` method: several inputs, returned as a tuple."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * torch.sigmoid(gate)

    def example_inputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.randn(4, 16), torch.randn(4, 16)


class MatmulAdd(nn.Module):
    """torch-mlir e2e style: shapes and dtypes in `@annotate_args` (None stands for self)."""

    @export
    @annotate_args([
        None,
        ([3, 4], torch.float32, True),
        ([4, 5], torch.float32, True),
    ])
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b) + 1.0


class Pooler(nn.Module):
    """Gets its inputs from the module-level `example_inputs()` below (keyed by class name)."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.dense = nn.Linear(dim, dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))


def example_inputs() -> dict[str, tuple[torch.Tensor, ...]]:
    """Module-level convention: inputs for this file's modules, keyed by class name."""
    return {"Pooler": (torch.randn(2, 10, 32),)}

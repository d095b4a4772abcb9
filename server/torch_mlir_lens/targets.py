"""The lowering targets Torch-MLIR Lens knows, and their pass pipelines.

Pure data (no torch import) so that the CLI and the language server can validate and list
targets without loading the worker.
"""

from __future__ import annotations

from dataclasses import dataclass

# Raw FX-imported IR → the torch backend contract.
TORCH_BACKEND_PIPELINE = "builtin.module(torchdynamo-export-to-torch-backend-pipeline)"


@dataclass(frozen=True)
class Target:
    """A named lowering target."""

    name: str
    title: str  # as shown to people: "Linalg", "TOSA", ...
    description: str
    backend_pipeline: str | None = None  # applied to torch-backend IR; None for fx/raw/torch
    is_backend: bool = False  # a backend whose unsupported ops are diagnosed


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("fx", "FX", "the ATen graph of the torch.export program, as PyTorch prints it"),
        Target("raw", "Raw", "the FX graph imported into the Torch dialect, before any pass"),
        Target("torch", "Torch", "the Torch dialect at the backend contract"),
        Target(
            "linalg",
            "Linalg",
            "linalg-on-tensors",
            "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)",
            is_backend=True,
        ),
        Target(
            "tosa",
            "TOSA",
            "the TOSA dialect",
            "builtin.module(torch-backend-to-tosa-backend-pipeline)",
            is_backend=True,
        ),
        Target(
            "stablehlo",
            "StableHLO",
            "the StableHLO dialect",
            "builtin.module(torch-backend-to-stablehlo-backend-pipeline)",
            is_backend=True,
        ),
        Target("llvm", "LLVM", "the LLVM dialect, lowered from linalg-on-tensors"),
    )
}

BACKENDS: tuple[str, ...] = tuple(name for name, t in TARGETS.items() if t.is_backend)
CUSTOM_TARGET = "custom"  # the result target name of a user-supplied pipeline


def target_title(name: str) -> str:
    """The human title of a target name ("linalg" → "Linalg"); unknown names pass through."""
    target = TARGETS.get(name)
    return target.title if target else name


def is_known_target(name: str) -> bool:
    return name in TARGETS

"""The lowering targets Torch-MLIR Lens knows, and their pass pipelines.

Pure data (no torch import) so that the CLI and the language server can validate and list
targets without loading the worker. Every pipeline string of the project is here: the worker
(lowering, unsupported-op listing, partial lowering, verify) reads them from this module.
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

# torch-backend IR → each backend, the whole pipeline (with the backend-contract check).
BACKEND_PIPELINES: dict[str, str] = {
    name: t.backend_pipeline for name, t in TARGETS.items() if t.backend_pipeline is not None
}

# Conversion prefixes of the backend pipelines (no backend-contract verification at the end):
# what is left unconverted after them is what the backend cannot lower.
LEFTOVER_PIPELINES: dict[str, str] = {
    "linalg": (
        "builtin.module(func.func(torch-restructure-non-constant-axes,torch-fuse-quantized-ops,"
        "convert-torch-to-tmtensor,canonicalize,convert-torch-to-linalg,canonicalize,"
        "convert-torch-to-scf,convert-torch-to-arith,convert-torch-to-tensor))"
    ),
    "stablehlo": "builtin.module(func.func(convert-torch-to-stablehlo,convert-torch-to-arith))",
}
CUSTOM_TARGET = "custom"  # the result target name of a user-supplied pipeline


def target_title(name: str) -> str:
    """The human title of a target name ("linalg" → "Linalg"); unknown names pass through."""
    target = TARGETS.get(name)
    return target.title if target else name


def is_known_target(name: str) -> bool:
    return name in TARGETS

"""Lower a module: torch.export once, FX import once, then any target from the kept stages.

    lowerer.py    ProgramLowerer (what to build for a target, cached) and lower_module
    options.py    LowerOptions (weights, locations, print-after-all, ...)
    writing.py    a lowerer's exports and reproducers written to disk

The stages themselves (torch.export and the FX import, pass pipelines, artifacts) are in
stages/, below blocks/ (a stitched program is exported and lowered through them too).
Callers import from this package; the names below are its public surface.
"""

from __future__ import annotations

from torch_mlir_lens.worker.lowering.lowerer import ProgramLowerer, lower_module
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.stages.artifacts import atomic_write
from torch_mlir_lens.worker.stages.pipeline import parsing_context, run_pipeline
from torch_mlir_lens.worker.stages.torch_export import as_module, export_program

__all__ = [
    "LowerOptions",
    "ProgramLowerer",
    "as_module",
    "atomic_write",
    "export_program",
    "lower_module",
    "parsing_context",
    "run_pipeline",
]

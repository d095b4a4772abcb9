"""Lower a module: torch.export once, FX import once, then any target from the kept stages.

    export.py     torch.export + the FX import (weights frozen in), failures at the user's line
    pipeline.py   run pass pipelines with diagnostics captured; the IR after each pass
    artifacts.py  printed IR + source map, the fx target, export files, repro files
    lowerer.py    ProgramLowerer (what to build for a target, cached) and lower_module
    options.py    LowerOptions (weights, locations, print-after-all, ...)

Callers import from this package; the names below are its public surface.
"""

from __future__ import annotations

from torch_mlir_lens.worker.lowering.artifacts import atomic_write
from torch_mlir_lens.worker.lowering.export import as_module, export_program
from torch_mlir_lens.worker.lowering.lowerer import ProgramLowerer, lower_module
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.lowering.pipeline import parsing_context, run_pipeline

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

"""A lowerer's IR written out: an export of a target, a reproducer of a lowering.

    write_export(lowerer, "tosa", "out.mlir", bytecode=False)  → bytes written (atomic)
    write_repro(lowerer, "linalg", "dir")                       → {"mlir_path", "command"}
"""

from __future__ import annotations

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.rules.targets import TORCH_BACKEND_PIPELINE
from torch_mlir_lens.worker.lowering.lowerer import ProgramLowerer
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.stages import artifacts


def write_export(lowerer: ProgramLowerer, target: str, output: str, *, bytecode: bool = False,
                 options: LowerOptions | None = None, pipeline: str | None = None) -> int:
    """Write the IR of `target` to `output` atomically (temp file + os.replace).

    Full weights always (the file must re-parse); locations when options.debug_info.
    Returns the number of bytes written. Failures raise LensError.
    """
    options = options or LowerOptions()
    if target == "fx":
        data = artifacts.fx_text_and_map(lowerer.program, lowerer.users)[0].encode()
    else:
        module = lowerer.module_for(target, pipeline=pipeline, options=options)
        data = artifacts.module_bytes(module, bytecode=bytecode, debug_info=options.debug_info)
    return artifacts.atomic_write(output, data)


def write_repro(lowerer: ProgramLowerer, target: str, output_dir: str, *,
                pipeline: str | None = None) -> dict[str, str]:
    """Write the input IR of `target`'s lowering and the torch-mlir-opt command for it.

    For a backend that is the torch-backend IR and the backend pipeline; if the torch
    pipeline itself fails, the raw IR and the torch pipeline.
    """
    if target in ("fx", "raw"):
        raise LensError(ErrorKind.BAD_REQUEST, f"no pass pipeline produces {target!r}")
    torch_mod = lowerer.torch_module()
    if target == "torch" or torch_mod is None:
        source, pipe, stage = lowerer.raw_module(), TORCH_BACKEND_PIPELINE, "raw"
    else:
        lower_target = "linalg" if target == "llvm" else target
        source, pipe, stage = torch_mod, lowerer.pipeline_for(lower_target, pipeline), "torch"
    return artifacts.write_repro(source, pipe, output_dir, module_name=lowerer.module_name,
                                 target=target, stage=stage)

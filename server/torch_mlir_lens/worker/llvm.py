"""The `llvm` target: linalg-on-tensors → LLVM dialect, ready for the ExecutionEngine.

The pipeline is made of upstream MLIR passes bundled in the torch-mlir wheel plus one
torch-mlir pass (`refback-munge-memref-copy`). Public functions get the C interface
(`llvm.emit_c_interface`) so that `ExecutionEngine.invoke` can call them.
"""

from __future__ import annotations

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from torch_mlir_lens.results import ErrorKind, LensError

# Why each step:
# - generalize named ops so that convert-linalg-to-loops sees plain linalg.generic;
# - one-shot-bufferize over function boundaries with identity layouts: arguments and results
#   are then plain contiguous memrefs, which is what the caller passes (C-contiguous arrays);
# - buffer-deallocation-pipeline frees temporaries and makes returned buffers owned by the
#   caller (so the caller may free them);
# - refback-munge-memref-copy turns memref.copy (from tensor.pad and bufferization.clone) into
#   a linalg copy: otherwise the JIT needs `memrefCopy` from a runtime library the wheel lacks;
# - the rest is the standard conversion of loops, arith, math, memref, func and cf to LLVM.
LLVM_PIPELINE = (
    "builtin.module("
    "func.func(linalg-generalize-named-ops),"
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map},"
    "func.func(buffer-deallocation-pipeline),"
    "convert-bufferization-to-memref,"
    "func.func(refback-munge-memref-copy),"
    "func.func(convert-linalg-to-loops),"
    "lower-affine,"
    "convert-scf-to-cf,"
    "func.func(arith-expand),"
    "func.func(convert-math-to-llvm),"
    "convert-math-to-libm,"
    "expand-strided-metadata,"
    "finalize-memref-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-func-to-llvm,"
    "convert-cf-to-llvm,"
    "convert-ub-to-llvm,"
    "reconcile-unrealized-casts)"
)


def _register_torch_passes() -> None:
    """Importing the torch dialect registers the `refback-*` passes used by the pipeline."""
    import torch_mlir.dialects.torch  # noqa: F401


def public_func_ops(module: ir.Module) -> list[ir.Operation]:
    """The top-level `func.func` ops that are not private (the ones a caller can invoke)."""
    funcs = []
    for op in module.body.operations:
        operation = op.operation
        if operation.name != "func.func":
            continue
        visibility = operation.attributes.get("sym_visibility", None)
        if visibility is not None and ir.StringAttr(visibility).value == "private":
            continue
        funcs.append(operation)
    return funcs


def mark_c_interface(module: ir.Module) -> None:
    """Ask for `_mlir_ciface_<name>` wrappers on every public function."""
    for func in public_func_ops(module):
        func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get(context=module.context)


def format_diagnostics(diagnostics: list[ir.DiagnosticInfo]) -> str:
    """The MLIR error diagnostics as text: one per line, notes indented."""
    lines: list[str] = []
    for diag in diagnostics:
        lines.append(f"{diag.location}: {diag.message}")
        lines.extend(f"  note: {note.location}: {note.message}" for note in diag.notes)
    return "\n".join(lines)


def run_pipeline(module: ir.Module, pipeline: str, *, stage: str = "LLVM") -> None:
    """Run `pipeline` on `module` in place; a failure raises LensError with MLIR's messages.

    `stage` names the goal in the message ("lowering to LLVM failed: ...").
    """
    ctx = module.context
    previous = ctx.emit_error_diagnostics
    # False: the errors come back on the exception instead of being printed to fd 2.
    ctx.emit_error_diagnostics = False
    try:
        pm = PassManager.parse(pipeline, context=ctx)
        pm.run(module.operation)
    except ir.MLIRError as exc:
        detail = format_diagnostics(list(exc.error_diagnostics)) or str(exc)
        raise LensError(ErrorKind.LOWERING_ERROR, f"lowering to {stage} failed:\n{detail}") from exc
    except ValueError as exc:  # PassManager.parse: unknown pass or bad syntax
        raise LensError(ErrorKind.BAD_PIPELINE, str(exc)) from exc
    finally:
        ctx.emit_error_diagnostics = previous


def lower_linalg_to_llvm(module: ir.Module) -> None:
    """Lower a linalg-on-tensors module to the LLVM dialect, in place.

    Public functions get `llvm.emit_c_interface` so the ExecutionEngine can call them as
    `_mlir_ciface_<name>(results*, args*...)`. Raises LensError("lowering-error") carrying the
    MLIR diagnostics if a pass fails.
    """
    _register_torch_passes()
    mark_c_interface(module)
    run_pipeline(module, LLVM_PIPELINE)

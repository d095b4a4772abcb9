"""The `llvm` target: linalg-on-tensors → LLVM dialect, ready for the ExecutionEngine.

The pipeline (`rules/targets.py`, `LLVM_PIPELINE_HEAD` and `_TAIL`, with why each pass is there)
is made of upstream MLIR passes bundled in the torch-mlir wheel plus a few torch-mlir ones; between
its halves `half_floats.py` turns f16/bf16 conversions into integer arithmetic, so that the
compiled code needs nothing of the CPU beyond x86-64 (SSE2) and no runtime builtin. Public
functions get the C interface (`llvm.emit_c_interface`) so that `ExecutionEngine.invoke` can
call them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LensError, Severity
from torch_mlir_lens.rules.targets import LLVM_PIPELINE_HEAD, LLVM_PIPELINE_TAIL
from torch_mlir_lens.worker.ir.locations import UserFiles, as_user_files, user_frames_of
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag, captured, error_diags
from torch_mlir_lens.worker.stages.half_floats import expand_half_float_conversions


def _register_torch_passes() -> None:
    """Importing the torch dialect registers the `refback-*` passes used by the pipeline."""
    import torch_mlir.dialects.torch  # noqa: F401


ModuleLike = Any  # ir.Module, or a builtin.module Operation / OpView (e.g. from clone())


def top_level_ops(module: ModuleLike) -> list[ir.Operation]:
    """The operations directly in the module's body."""
    return [op.operation for op in module.operation.regions[0].blocks[0].operations]


def public_func_ops(module: ModuleLike) -> list[ir.Operation]:
    """The top-level `func.func` ops that are not private (the ones a caller can invoke)."""
    funcs = []
    for op in top_level_ops(module):
        operation = op.operation
        if operation.name != "func.func":
            continue
        visibility = operation.attributes.get("sym_visibility", None)
        if visibility is not None and ir.StringAttr(visibility).value == "private":
            continue
        funcs.append(operation)
    return funcs


def mark_c_interface(module: ModuleLike) -> None:
    """Ask for `_mlir_ciface_<name>` wrappers on every public function."""
    for func in public_func_ops(module):
        func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get(context=module.context)


class PipelineError(LensError):
    """A pass pipeline failed: the LensError of the first error, plus one diagnostic per error."""

    def __init__(self, message: str, diagnostics: list[LensDiagnostic], **where: Any) -> None:
        super().__init__(ErrorKind.LOWERING_ERROR, message, **where)
        self.diagnostics = diagnostics


def format_diagnostics(diags: Sequence[Diag]) -> str:
    """The MLIR error diagnostics as text: one per line, notes indented."""
    lines: list[str] = []
    for diag in diags:
        lines.append(f"{diag.location}: {diag.message}")
        lines.extend(f"  note: {note.location}: {note.message}" for note in diag.notes)
    return "\n".join(lines)


def _lens_diagnostic(
    diag: Diag, stage: str, user_files: UserFiles | None, target: str
) -> LensDiagnostic:
    frames = user_frames_of(diag.location, user_files) if user_files else []
    file, line = frames[0] if frames else (None, None)
    return LensDiagnostic(
        severity=Severity.ERROR, message=f"lowering to {stage} failed: {diag.message}",
        kind=ErrorKind.LOWERING_ERROR, file=file, line=line, target=target,
    )


def run_located_pipeline(
    module: ModuleLike,
    pipeline: str,
    *,
    stage: str = "LLVM",
    user_files: Iterable[str] | UserFiles | None = None,
    target: str = "llvm",
) -> None:
    """Run `pipeline` on `module` in place; a failure raises PipelineError with MLIR's errors.

    `stage` names the goal in messages ("lowering to LLVM failed: ..."); with `user_files`
    each diagnostic is placed at the innermost frame in those files.
    """
    ctx = module.context
    try:
        pm = PassManager.parse(pipeline, context=ctx)
    except (ValueError, ir.MLIRError) as exc:  # unknown pass or bad syntax
        raise LensError(ErrorKind.BAD_PIPELINE, str(exc)) from exc
    with captured(ctx) as collected:
        try:
            pm.run(module.operation)
            return
        except ir.MLIRError as exc:
            diags = error_diags(exc, collected)
    files = as_user_files(user_files) if user_files is not None else None
    lens = [_lens_diagnostic(d, stage, files, target) for d in diags]
    message = f"lowering to {stage} failed:\n{format_diagnostics(diags)}"
    raise PipelineError(message, lens, file=lens[0].file, line=lens[0].line)


def lower_linalg_to_llvm(
    module: ModuleLike, *, user_files: Iterable[str] | UserFiles | None = None
) -> None:
    """Lower a linalg-on-tensors module to the LLVM dialect, in place.

    Public functions get `llvm.emit_c_interface` so the ExecutionEngine can call them as
    `_mlir_ciface_<name>(results*, args*...)`. Raises LensError("lowering-error") carrying the
    MLIR diagnostics if a pass fails (a PipelineError: `.diagnostics` has one per error,
    placed at the innermost frame in `user_files` when given).
    """
    _register_torch_passes()
    mark_c_interface(module)
    run_located_pipeline(module, LLVM_PIPELINE_HEAD, user_files=user_files)
    expand_half_float_conversions(module)
    run_located_pipeline(module, LLVM_PIPELINE_TAIL, user_files=user_files)
    _check_all_llvm(module, user_files)


def leftover_ops(module: ModuleLike) -> list[tuple[str, str]]:
    """(op name, location text) of every op left outside the LLVM dialect, first seen first.

    The pipeline can "succeed" and still leave an op no pass knew (e.g. linalg.softmax, kept
    alive by an unrealized cast): the JIT then fails with an unhelpful message.
    """
    found: list[tuple[str, str]] = []
    seen: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if not name.startswith("llvm.") and name != "builtin.module" and name not in seen:
            seen.add(name)
            found.append((name, str(op.location)))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    # The casts only say that something else was left: name that something first.
    return sorted(found, key=lambda f: f[0] == "builtin.unrealized_conversion_cast")


def external_functions(module: ModuleLike) -> list[str]:
    """Names of the `llvm.func` declarations (no body): symbols the JIT must find elsewhere."""
    names = []
    for operation in top_level_ops(module):
        if operation.name == "llvm.func" and not operation.regions[0].blocks:
            names.append(ir.StringAttr(operation.attributes["sym_name"]).value)
    return names


def _check_all_llvm(module: ModuleLike, user_files: Iterable[str] | UserFiles | None) -> None:
    leftovers = leftover_ops(module)
    if not leftovers:
        return
    files = as_user_files(user_files) if user_files is not None else None
    diags = [
        Diag("error", f"'{name}' was not lowered to the LLVM dialect", loc)
        for name, loc in leftovers
    ]
    lens = [_lens_diagnostic(d, "LLVM", files, "llvm") for d in diags]
    message = f"lowering to LLVM failed:\n{format_diagnostics(diags)}"
    raise PipelineError(message, lens, file=lens[0].file, line=lens[0].line)

"""The worker's `verify` job: load → example inputs → export → linalg → LLVM → JIT → compare.

    run_verify_job(job)          a VerifyJob on its own → VerifyResult
    check_options(job)           tolerances and optimisation level, validated
    verify_callable(fn, args, …) export + verify one module instance
    verify_lowerer(lowerer, …)   verify from an existing ProgramLowerer (shares its export)

The eager reference must be the *same instance* that was exported (same weights), so the
module is instantiated once here and used for both.

Errors that stop a `lower` job stop this one too (load, unknown module, inputs: LensError).
A module that does not export or lower is a result with ok=False and the diagnostics, like
a mismatch, so the editor can show where.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from torch_mlir_lens.protocol.jobs import VerifyJob
from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LensError, Severity
from torch_mlir_lens.protocol.verify_results import DimSize, VerifyResult, dims_text
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.worker.loading.job_fields import read_text
from torch_mlir_lens.worker.verify import sizes
from torch_mlir_lens.worker.verify.backends import linalg_of
from torch_mlir_lens.worker.verify.linalg import SizeInputs, verify_linalg_module

MAX_OPT_LEVEL = 3


def check_options(job: VerifyJob) -> None:
    """Tolerances >= 0 and an optimisation level in 0..3; LensError("bad-request") if not."""
    for key, value in (("rtol", job.rtol), ("atol", job.atol)):
        if value is not None and value < 0:
            raise LensError(ErrorKind.BAD_REQUEST, f"{key} must be a number >= 0, not {value}")
    if not 0 <= job.opt_level <= MAX_OPT_LEVEL:
        raise LensError(ErrorKind.BAD_REQUEST,
                        f"opt_level must be 0..{MAX_OPT_LEVEL}, not {job.opt_level}")


def _failed(module_name: str, diagnostics: list[Any], message: str, kind: str,
            rtol: float | None, atol: float | None, timings: dict[str, float]) -> VerifyResult:
    return VerifyResult(
        module=module_name, ok=False, rtol=rtol, atol=atol, timings=timings,
        diagnostics=diagnostics, message=f"✗ {message}", kind=kind,
    )


def verify_lowerer(
    lowerer: Any,
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    opt_level: int = 0,
    locate: bool = True,
    mutate_ir: Callable[[str], str] | None = None,
    dynamic_shapes: Any = None,
    backend: str = "linalg",
) -> VerifyResult:
    """Verify the linalg lowering of an existing `worker.lowering.ProgramLowerer`.

    `backend` "tosa" or "stablehlo": run that backend's IR instead, converted to Linalg
    (backends.py), so what is checked is what that backend produced.

    `fn` must be the instance that was exported. The lowerer's cached linalg module is not
    modified (verify lowers a copy). A program with dynamic dims runs at several sizes of
    them (sizes.py; `dynamic_shapes`, the spec it was exported with, names them). On a
    mismatch and with `locate`, the first user line whose values differ (at the first size
    that differs) is searched (divergence.py) and reported as `divergence` and as a
    diagnostic at that line. `mutate_ir` alters the linalg text first (tests).
    """
    name = lowerer.module_name
    start = time.perf_counter()
    try:
        linalg = linalg_of(lowerer, backend)
    except LensError as err:
        if err.kind == ErrorKind.BAD_REQUEST:
            raise
        lower_s = round(time.perf_counter() - start, 6)
        if err.kind == ErrorKind.VERIFY_ERROR:  # the backend's IR does not convert to run
            return _failed(name, [err.to_diagnostic(backend)], err.message, err.kind, rtol,
                           atol, {"lower": lower_s, "total": lower_s})
        # lower() lists every unsupported op with its line, not just the first error.
        listed = lowerer.lower(backend)
        diags = listed.diagnostics or [err.to_diagnostic(backend)]
        timings = {"lower": lower_s, "total": lower_s}
        # The same words as `lower`, `export` and `check`: every culprit at its line.
        return _failed(name, diags, culprits.summary(diags, backend), diags[0].kind,
                       rtol, atol, timings)
    lower_s = round(time.perf_counter() - start, 6)
    runs = size_inputs(lowerer.program, fn, args, kwargs or {}, dynamic_shapes)
    result = verify_linalg_module(
        linalg, fn, args, kwargs, module_name=name, rtol=rtol, atol=atol,
        opt_level=opt_level, user_files=lowerer.users, mutate_ir=mutate_ir, sizes=runs,
        state_results=state_writes(lowerer.program),
    )
    if locate and result.kind == ErrorKind.VERIFY_MISMATCH:
        failing = next((run for run, check in zip(runs, result.sizes, strict=False)
                        if check.outputs and not check.ok), None)
        if failing is not None:
            args, kwargs = failing.args, failing.kwargs
        _locate(result, linalg, lowerer, args, kwargs, rtol, atol, opt_level, mutate_ir,
                failing.dims if failing is not None else [])
    result.timings = {"lower": lower_s, **result.timings}
    result.timings["total"] = round(result.timings.get("total", 0.0) + lower_s, 6)
    return result


def state_writes(program: Any) -> int:
    """How many of the program's results are state it writes back (buffers and inputs its
    forward updates in place): torch.export puts them before the user's outputs."""
    return sum(1 for spec in program.graph_signature.output_specs
               if spec.kind.name.endswith("_MUTATION"))


def size_inputs(program: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 spec: Any) -> list[SizeInputs]:
    """Inputs at each size of the program's dynamic dims (none for a static program)."""
    dims = sizes.dynamic_dims(program, fn, args, kwargs, spec)
    runs = []
    for point in sizes.size_points(dims):
        try:
            new_args, new_kwargs = sizes.inputs_at(program, args, kwargs, dims, point)
        except (TypeError, ValueError):  # a size the program's shapes cannot be solved for
            continue
        runs.append(SizeInputs(list(point), new_args, new_kwargs))
    return runs


def _locate(result: VerifyResult, linalg: Any, lowerer: Any, args: tuple[Any, ...],
            kwargs: dict[str, Any] | None, rtol: float | None, atol: float | None,
            opt_level: int, mutate_ir: Callable[[str], str] | None,
            dims: list[DimSize]) -> None:
    """Add the first diverging line to a mismatch (best effort: a failure only loses it);
    `dims`: the sizes of the dynamic dims it was run at, if any."""
    from torch_mlir_lens.worker.verify.divergence import first_divergence

    start = time.perf_counter()
    try:
        found = first_divergence(
            linalg, lowerer.program, args, kwargs, user_files=lowerer.users, rtol=rtol,
            atol=atol, opt_level=opt_level, mutate_ir=mutate_ir,
        )
    except Exception:  # a heuristic on top of a verdict that already stands
        found = None
    result.timings["locate"] = round(time.perf_counter() - start, 6)
    result.timings["total"] = round(result.timings.get("total", 0.0) + result.timings["locate"], 6)
    if found is None:
        return
    if dims:
        found.message += f" (at {dims_text(dims)})"
    result.divergence = found
    result.diagnostics.insert(0, LensDiagnostic(
        severity=Severity.ERROR, message=found.message, kind=ErrorKind.VERIFY_MISMATCH,
        file=found.file, line=found.line, target="llvm",
    ))
    result.message += f" — first differs at line {found.line}"


def verify_callable(
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    *,
    module_name: str,
    user_files: Iterable[str],
    strict: bool = False,
    dynamic_shapes: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
    opt_level: int = 0,
    mutate_ir: Callable[[str], str] | None = None,
    dynamic_at: tuple[str, int] | None = None,
) -> VerifyResult:
    """torch.export `fn` (the shared export of worker/lowering/), then verify_lowerer."""
    from torch_mlir_lens.worker import lowering

    files = list(user_files)
    start = time.perf_counter()
    try:
        program = lowering.export_program(
            fn, tuple(args), dict(kwargs or {}), user_files=files, strict=strict,
            dynamic_shapes=dynamic_shapes, dynamic_at=dynamic_at,
        )
    except LensError as err:
        export_s = round(time.perf_counter() - start, 6)
        timings = {"export": export_s, "total": export_s}
        return _failed(module_name, [err.to_diagnostic("linalg")], err.message, err.kind,
                       rtol, atol, timings)
    export_s = round(time.perf_counter() - start, 6)
    lowerer = lowering.ProgramLowerer(program, module_name=module_name, user_files=files)
    result = verify_lowerer(lowerer, fn, args, kwargs, rtol=rtol, atol=atol, opt_level=opt_level,
                            mutate_ir=mutate_ir, dynamic_shapes=dynamic_shapes)
    result.timings = {"export": export_s, **result.timings}
    result.timings["total"] = round(result.timings.get("total", 0.0) + export_s, 6)
    return result


def run_verify_job(job: VerifyJob,
                   mutate_ir: Callable[[str], str] | None = None) -> VerifyResult:
    """A `verify` job on its own: load, inputs, export, verify (the worker's job shares the
    export of its program cache instead, `worker/job_handlers.py`).

    Raises LensError for bad requests, load errors, unknown modules and inputs problems (the
    job's error reply). `mutate_ir` alters the linalg text before it is compiled (tests force
    a mismatch with it).
    """
    from torch_mlir_lens.worker import inputs as inputs_mod
    from torch_mlir_lens.worker.loading import loader

    check_options(job)
    rtol, atol, opt_level = job.rtol, job.atol, job.opt_level
    path = os.path.abspath(job.path)
    text = job.text if job.text is not None else read_text(path)
    name = job.module

    start = time.perf_counter()
    mod = loader.load_definitions(path, text)
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    resolved = inputs_mod.resolve_inputs(
        mod, name, path=path, text=text,
        inputs_expr=job.inputs, inputs_file=job.inputs_file, init_expr=job.init,
        settings_inputs=job.settings_inputs, workspace=job.workspace,
    )
    fn = inputs_mod.instantiate(mod, name, resolved)
    inputs_s = time.perf_counter() - start

    result = verify_callable(
        fn, resolved.args, resolved.kwargs, module_name=name,
        user_files=loader.user_files_for(path), strict=job.strict,
        dynamic_shapes=resolved.dynamic_shapes, rtol=rtol, atol=atol, opt_level=opt_level,
        mutate_ir=mutate_ir, dynamic_at=resolved.dynamic_at,
    )
    result.timings = {"load": round(load_s, 6), "inputs": round(inputs_s, 6), **result.timings}
    result.timings["total"] = round(result.timings.get("total", 0.0) + load_s + inputs_s, 6)
    result.inputs_source = resolved.source
    return result

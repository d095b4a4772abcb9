"""Verify on IREE's runtime: the module IREE compiled, run on the example inputs (and at
several sizes of its dynamic dims), compared with eager PyTorch.

    verify_target(lowerer, target, eager, arch=..., rtol=..., atol=...) → VerifyResult

The same tolerances, words and report as the other targets' Verify (`worker/verify/`:
compare.py's per-dtype tolerances and verdicts, sizes.py's sizes, the state a forward writes
back not compared). What differs is what runs: IREE's `main` through `iree.runtime`
(runtime.py) instead of torch-mlir's JIT. On a mismatch the first diverging line is searched
as Verify searches it (divergence.py), the instrumented module compiled by IREE too. On IREE
CPU the result also carries the compiled module's time against eager's (`speed`).

No verdict (exit 3, "verify-error") when Verify itself cannot run: IREE missing, a GPU
target on a machine without that GPU ("compiled, not run: no device"), weights left out.
A module that does not reach Linalg or that IREE does not compile has its diagnostics, as a
module that does not lower has today.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

import torch

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LensError, Severity
from torch_mlir_lens.protocol.verify_results import VerifyOutput, VerifyResult, dims_text
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.iree_targets import IREE_DEVICES, arch_title
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.worker.iree import compile_errors, runtime, timing
from torch_mlir_lens.worker.iree.build import compile_scratch
from torch_mlir_lens.worker.iree.lowering import Eager, compile_for
from torch_mlir_lens.worker.iree.tools import Install
from torch_mlir_lens.worker.lowering import ProgramLowerer
from torch_mlir_lens.worker.verify.compare import (
    compare_output,
    mismatch_diagnostics,
    reinterpret_like,
    verdict_message,
)
from torch_mlir_lens.worker.verify.job import size_inputs, state_writes
from torch_mlir_lens.worker.verify.linalg import (
    SizeInputs,
    flat_tensors,
    run_eager,
    sizes_result,
)


def _failed(name: str, message: str, kind: str, diagnostics: list[LensDiagnostic],
            rtol: float | None, atol: float | None, timings: dict[str, float]) -> VerifyResult:
    return VerifyResult(module=name, ok=False, rtol=rtol, atol=atol, timings=timings,
                        diagnostics=diagnostics, message=f"✗ {message}", kind=kind)


def _not_run(name: str, target: str, why: str, rtol: float | None, atol: float | None,
             timings: dict[str, float]) -> VerifyResult:
    message = f"Verify could not run it: {why}: no verdict on the module"
    return _failed(name, message, ErrorKind.VERIFY_ERROR,
                   [LensDiagnostic(severity=Severity.ERROR, message=message,
                                   kind=ErrorKind.VERIFY_ERROR, target=target)],
                   rtol, atol, timings)


def _run(loaded: runtime.Loaded, eager: Eager, run: SizeInputs, state: int,
         rtol: float | None, atol: float | None) -> list[VerifyOutput]:
    inputs = flat_tensors((run.args, run.kwargs))
    try:
        actual = loaded([runtime.to_numpy(t) for t in inputs])[state:]
    except Exception as exc:  # IREE's runtime refusing the call (shapes, a failed assert)
        raise LensError(ErrorKind.VERIFY_ERROR, f"IREE's runtime failed: {exc}") from exc
    try:
        expected = run_eager(eager.fn, run.args, run.kwargs)
    except Exception as exc:  # the user's code: anything can happen
        raise LensError(ErrorKind.VERIFY_ERROR, f"eager run failed: {exc!r}") from exc
    if len(actual) != len(expected):
        raise LensError(ErrorKind.VERIFY_ERROR, f"the compiled function returns "
                        f"{len(actual)} tensors, eager {len(expected)}")
    return [compare_output(i, reinterpret_like(runtime.to_torch(a, e), e), e, rtol, atol)
            for i, (a, e) in enumerate(zip(actual, expected, strict=True))]


def verify_target(lowerer: ProgramLowerer, target: str, eager: Eager, *, arch: str | None,
                  rtol: float | None, atol: float | None,
                  locate: bool = True) -> VerifyResult:
    """Run the IREE-compiled module on the example inputs and compare with eager."""
    name, title = lowerer.module_name, target_title(target)
    start = time.perf_counter()
    timings: dict[str, float] = {}
    try:
        install, compiled = compile_for(lowerer, target, arch, weightless=False)
    except LensError as err:
        if err.kind in (ErrorKind.MISSING_DEPENDENCY, ErrorKind.BAD_REQUEST):
            raise
        listed = lowerer.lower("linalg")
        diags = listed.diagnostics or [err.to_diagnostic("linalg")]
        timings["total"] = round(time.perf_counter() - start, 6)
        return _failed(name, culprits.summary(diags, "linalg"), diags[0].kind, diags, rtol,
                       atol, timings)
    timings["iree_compile"] = round(time.perf_counter() - start, 6)  # 0 when reused
    ran = time.perf_counter()
    if not compiled.ok or compiled.vmfb is None:
        diags = compile_errors.diagnostics(compiled.errors, lowerer.users, target=target,
                                           title=title)
        message = diags[0].message if diags else f"{title}: iree-compile failed"
        return _failed(name, message, ErrorKind.COMPILE_ERROR, diags, rtol, atol, timings)
    device = IREE_DEVICES[target].driver
    missing = runtime.device_error(device)
    if missing is not None:
        return _not_run(name, target, f"{title} ({arch_title(target, arch)}): compiled, "
                        f"not run: no device ({missing})", rtol, atol, timings)
    loaded = runtime.load(compiled.vmfb, device)
    runs = size_inputs(lowerer.program, eager.fn, eager.args, eager.kwargs,
                       eager.dynamic_shapes) or [SizeInputs([], eager.args, eager.kwargs)]
    state = state_writes(lowerer.program)
    checks: list[tuple[SizeInputs, list[VerifyOutput] | LensError]] = []
    try:
        for run in runs:
            try:
                checks.append((run, _run(loaded, eager, run, state, rtol, atol)))
            except LensError as exc:
                if not run.dims or run is runs[0]:
                    raise
                checks.append((run, exc))
    except LensError as exc:
        timings["total"] = round(time.perf_counter() - start, 6)
        return _failed(name, exc.message.splitlines()[0], exc.kind,
                       [exc.to_diagnostic(target)], rtol, atol, timings)
    timings["run"] = round(time.perf_counter() - ran, 6)
    result = _verdict(name, checks, bool(runs[0].dims), rtol, atol, timings, target)
    if locate and result.kind == ErrorKind.VERIFY_MISMATCH:
        failing = next((run for run, c in checks if isinstance(c, list)
                        and not all(o.ok for o in c)), runs[0])
        _locate(result, install, lowerer, target, arch, failing, rtol, atol)
    if not IREE_DEVICES[target].is_gpu and result.compared():
        inputs = [runtime.to_numpy(t) for t in flat_tensors((eager.args, eager.kwargs))]
        speed = timing.time_module(loaded, inputs, eager.fn, eager.args, eager.kwargs)
        result.speed = speed.to_json(target, device)
    result.timings["total"] = round(time.perf_counter() - start, 6)
    return result


def _verdict(name: str, checks: list[tuple[SizeInputs, list[VerifyOutput] | LensError]],
             sized: bool, rtol: float | None, atol: float | None,
             timings: dict[str, float], target: str) -> VerifyResult:
    if sized:
        result = sizes_result(name, checks, rtol, atol, timings)
    else:
        outputs = checks[0][1]
        assert isinstance(outputs, list)  # the example's failure raised
        ok = all(o.ok for o in outputs)
        result = VerifyResult(
            module=name, ok=ok, outputs=outputs, rtol=rtol, atol=atol, timings=timings,
            diagnostics=[] if ok else mismatch_diagnostics(outputs),
            message=verdict_message(outputs), kind=None if ok else ErrorKind.VERIFY_MISMATCH,
            max_abs_err=max((o.max_abs_err for o in outputs), default=0.0))
    for d in result.diagnostics:
        d.target = target
    return result


def _locate(result: VerifyResult, install: Install, lowerer: ProgramLowerer, target: str,
            arch: str | None, failing: SizeInputs, rtol: float | None,
            atol: float | None) -> None:
    """The first user line whose IREE-computed values differ from eager's (best effort)."""
    from torch_mlir_lens.worker.verify.divergence import first_divergence

    start = time.perf_counter()
    driver = IREE_DEVICES[target].driver

    def run(module: Any, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        with tempfile.TemporaryDirectory(prefix="torch-mlir-lens-locate-") as folder:
            compiled = compile_scratch(install, module, target, arch, folder)
            if compiled.vmfb is None:
                raise LensError(ErrorKind.VERIFY_ERROR, "the instrumented module did not "
                                "compile")
            out = runtime.load(compiled.vmfb, driver)([runtime.to_numpy(t) for t in inputs])
        return [runtime.to_torch(a) for a in out]

    try:
        found = first_divergence(lowerer.module_for("linalg"), lowerer.program, failing.args,
                                 failing.kwargs, user_files=lowerer.users, rtol=rtol,
                                 atol=atol, run=run)
    except Exception:  # a heuristic on top of a verdict that already stands
        found = None
    result.timings["locate"] = round(time.perf_counter() - start, 6)
    if found is None:
        return
    if failing.dims:
        found.message += f" (at {dims_text(failing.dims)})"
    result.divergence = found
    result.diagnostics.insert(0, LensDiagnostic(
        severity=Severity.ERROR, message=found.message, kind=ErrorKind.VERIFY_MISMATCH,
        file=found.file, line=found.line, target=target))
    result.message += f" — first differs at line {found.line}"


__all__ = ["verify_target"]

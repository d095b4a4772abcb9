"""Verify one linalg-on-tensors module: lower to LLVM, JIT, run on the inputs, compare with eager.

    verify_linalg_module(linalg, fn, args, kwargs, module_name=...)  → VerifyResult

linalg-on-tensors → LLVM (worker/stages/llvm.py) → JIT (jit.py) → call the public function on the
example inputs, flattened like torch.export → compare every output with `fn(*args, **kwargs)`
(compare.py). Problems come back in the result, never as exceptions.
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LensError, Severity
from torch_mlir_lens.protocol.verify_results import (
    DimSize,
    SizeCheck,
    VerifyOutput,
    VerifyResult,
    dims_text,
)
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.stages.llvm import PipelineError, lower_linalg_to_llvm
from torch_mlir_lens.worker.verify.compare import (
    compare_output,
    format_error,
    mismatch_diagnostics,
    reinterpret_like,
    verdict_message,
)
from torch_mlir_lens.worker.verify.jit import FuncSig, function_signature, jit, link, run_compiled

# ---------------------------------------------------------------------------------------------
# Flattening inputs and outputs like torch.export


def flat_tensors(tree: Any) -> list[torch.Tensor]:
    """Tensor leaves of a pytree (tuple/list/dict/...), in torch.export's order."""
    return [leaf for leaf in pytree.tree_leaves(tree) if isinstance(leaf, torch.Tensor)]


def _clone_tree(tree: Any) -> Any:
    """Copies of the tensors, so an in-place eager op cannot change what the JIT sees."""
    return pytree.tree_map(
        lambda x: x.detach().clone() if isinstance(x, torch.Tensor) else x, tree
    )


def run_eager(
    fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]
) -> list[torch.Tensor]:
    """Run `fn` eagerly (no grad) on copies of the inputs; flattened tensor outputs."""
    with torch.no_grad():
        out = fn(*_clone_tree(tuple(args)), **_clone_tree(dict(kwargs)))
    return [t.detach() for t in flat_tensors(out)]


def _check_inputs(sig: FuncSig, inputs: Sequence[torch.Tensor]) -> None:
    if len(inputs) != len(sig.inputs):
        raise LensError(
            ErrorKind.VERIFY_ERROR,
            f"the compiled function takes {len(sig.inputs)} tensors, the example inputs "
            f"have {len(inputs)}",
        )
    for i, (t, s) in enumerate(zip(inputs, sig.inputs, strict=True)):
        static_ok = len(s.shape) == t.dim() and all(
            d is None or d == n for d, n in zip(s.shape, t.shape, strict=True)
        )
        if not static_ok or t.dtype != s.torch_dtype:
            raise LensError(
                ErrorKind.VERIFY_ERROR,
                f"input {i}: the compiled function takes {list(s.shape)}x{s.element}, the "
                f"example input is {list(t.shape)} {t.dtype}",
            )


# ---------------------------------------------------------------------------------------------
# The entry point


def private_copy(
    source: str | ir.Module, mutate_ir: Callable[[str], str] | None, context: ir.Context | None
) -> ir.Module:
    """A private copy of the linalg module (lowering works in place; the caller keeps its own)."""
    if isinstance(source, str):
        text = mutate_ir(source) if mutate_ir else source
        ctx = context or ir.Context()
        return ir.Module.parse(text, context=ctx)
    if mutate_ir is not None:
        text = mutate_ir(source.operation.get_asm(enable_debug_info=True))
        return ir.Module.parse(text, context=source.context)
    # Bytecode round-trip: an exact copy, weights stay binary (fast even for big models).
    buf = io.BytesIO()
    source.operation.write_bytecode(buf)
    return ir.Module.parse(buf.getvalue(), context=source.context)


def _error_result(
    module_name: str, exc: LensError, timings: dict[str, float],
    rtol: float | None, atol: float | None,
) -> VerifyResult:
    if isinstance(exc, PipelineError) and exc.diagnostics:
        diagnostics = list(exc.diagnostics)
        message = f"✗ {diagnostics[0].message}"
    else:
        diagnostics = [exc.to_diagnostic(target="llvm")]
        message = f"✗ {exc.message.splitlines()[0] if exc.message else exc.kind}"
    return VerifyResult(
        module=module_name, ok=False, rtol=rtol, atol=atol, timings=timings,
        diagnostics=diagnostics, message=message, kind=exc.kind,
    )


def _own_step(step: Callable[[], None]) -> None:
    """Run one of Verify's own steps (Linalg to LLVM): its failure is Verify's, not the
    module's, so it is a "verify-error" (could not run), never a verdict on the module."""
    try:
        step()
    except PipelineError as exc:
        exc.kind = ErrorKind.VERIFY_ERROR
        exc.message = f"Verify could not run it: {exc.message}"
        for diag in exc.diagnostics:
            diag.kind = ErrorKind.VERIFY_ERROR
            diag.message = f"Verify could not run it: {diag.message}"
        raise


@dataclass(frozen=True)
class SizeInputs:
    """Inputs of one size of a module's dynamic dims (the example's first)."""

    dims: list[DimSize]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def verify_linalg_module(
    linalg: str | ir.Module,
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    *,
    module_name: str,
    rtol: float | None = None,
    atol: float | None = None,
    opt_level: int = 0,
    mutate_ir: Callable[[str], str] | None = None,
    func_name: str | None = None,
    context: ir.Context | None = None,
    user_files: Iterable[str] | UserFiles | None = None,
    sizes: Sequence[SizeInputs] = (),
    state_results: int = 0,
) -> VerifyResult:
    """Lower linalg-on-tensors IR to LLVM, JIT it, run it on the inputs, compare with eager.

    `linalg` is IR text or a module (not modified: a copy is lowered). `mutate_ir` rewrites
    the IR text before it is parsed (tests alter a constant to see a mismatch reported).
    `user_files` places lowering diagnostics at the innermost frame in those files.
    `rtol`/`atol` override the per-dtype defaults for floating outputs. `sizes` (a module
    with dynamic dims): run the one compilation at each of these sizes instead, the example's
    first, and report each (`VerifyResult.sizes`). `state_results`: how many leading results
    are state the program writes back (a buffer its forward updates: a cache, running
    statistics), which eager keeps in the module, not in its outputs; they are not compared.
    Problems come back in the result (`ok` False, `kind`, `diagnostics`), not as exceptions.
    """
    kwargs = dict(kwargs or {})
    timings: dict[str, float] = {}
    start = time.perf_counter()

    def lap(name: str, t0: float) -> float:
        now = time.perf_counter()
        timings[name] = round(timings.get(name, 0.0) + now - t0, 6)
        return now

    runs = list(sizes) or [SizeInputs([], tuple(args), kwargs)]
    checks: list[tuple[SizeInputs, list[VerifyOutput] | LensError]] = []
    try:
        t = time.perf_counter()
        module = private_copy(linalg, mutate_ir, context)
        sig = function_signature(module, func_name)
        _check_inputs(sig, flat_tensors((tuple(args), kwargs)))
        _own_step(lambda: lower_linalg_to_llvm(module, user_files=user_files))
        t = lap("lower_llvm", t)
        engine = jit(module, opt_level)
        link(engine, sig.name, module, opt_level)
        t = lap("jit", t)
        for run in runs:
            try:
                outcome: list[VerifyOutput] | LensError = _run_and_compare(
                    engine, sig, fn, run, rtol, atol, lap, state_results)
            except LensError as exc:
                if not run.dims or run is runs[0]:
                    raise  # the example's own run: the verdict itself
                outcome = exc
            checks.append((run, outcome))
        del engine
    except LensError as exc:
        lap("total", start)
        return _error_result(module_name, exc, timings, rtol, atol)
    except ir.MLIRError as exc:  # parsing the (mutated) IR text
        lap("total", start)
        err = LensError(ErrorKind.LOWERING_ERROR, f"invalid IR: {exc}")
        return _error_result(module_name, err, timings, rtol, atol)
    lap("total", start)
    example = checks[0][1]
    assert isinstance(example, list)  # the example's failures raised above
    if not sizes:
        ok = all(o.ok for o in example)
        return VerifyResult(
            module=module_name, ok=ok, outputs=example, rtol=rtol, atol=atol, timings=timings,
            diagnostics=[] if ok else mismatch_diagnostics(example),
            message=verdict_message(example),
            kind=None if ok else ErrorKind.VERIFY_MISMATCH,
            max_abs_err=max((o.max_abs_err for o in example), default=0.0),
        )
    return sizes_result(module_name, checks, rtol, atol, timings)


def _run_and_compare(engine: Any, sig: FuncSig, fn: Callable[..., Any], run: SizeInputs,
                     rtol: float | None, atol: float | None,
                     lap: Callable[[str, float], float],
                     state_results: int = 0) -> list[VerifyOutput]:
    """Run the compiled function and eager on one size's inputs; compare every output (the
    leading `state_results`, written-back state, are not outputs)."""
    t = time.perf_counter()
    inputs = flat_tensors((run.args, run.kwargs))
    _check_inputs(sig, inputs)
    actual = run_compiled(engine, sig, inputs)[state_results:]
    t = lap("run", t)
    try:
        expected = run_eager(fn, run.args, run.kwargs)
    except Exception as exc:  # the user's code: anything can happen
        raise LensError(ErrorKind.VERIFY_ERROR, f"eager run failed: {exc!r}") from exc
    t = lap("eager", t)
    if len(actual) != len(expected):
        raise LensError(
            ErrorKind.VERIFY_ERROR,
            f"the compiled function returns {len(actual)} tensors, eager {len(expected)}",
        )
    outputs = [
        compare_output(i, reinterpret_like(a, e), e, rtol, atol)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True))
    ]
    lap("compare", t)
    return outputs


def sizes_result(module_name: str,
                  checks: Sequence[tuple[SizeInputs, list[VerifyOutput] | LensError]],
                  rtol: float | None, atol: float | None,
                  timings: dict[str, float]) -> VerifyResult:
    """The verdict over every size: ok only if each matched; the first failure speaks."""
    done: list[SizeCheck] = []
    diagnostics: list[LensDiagnostic] = []
    for i, (run, outcome) in enumerate(checks):
        where = dims_text(run.dims)
        if isinstance(outcome, LensError):
            message = f"✗ at {where}: {outcome.message.splitlines()[0]}"
            done.append(SizeCheck(run.dims, i == 0, False, message, math.inf))
            diagnostics.append(LensDiagnostic(
                severity=Severity.ERROR, message=f"at {where}: {outcome.message}",
                kind=outcome.kind, target="llvm"))
            continue
        ok = all(o.ok for o in outcome)
        done.append(SizeCheck(run.dims, i == 0, ok, verdict_message(outcome),
                              max((o.max_abs_err for o in outcome), default=0.0), outcome))
        for diag in mismatch_diagnostics(outcome):
            diag.message = diag.message.replace("from eager:", f"from eager at {where}:", 1)
            diagnostics.append(diag)
    failed = [c for c in done if not c.ok]
    worst = max((c.max_abs_err for c in done), default=0.0)
    if not failed:
        message = f"✓ matches eager at {len(done)} sizes (max err {format_error(worst)})"
        kind = None
    else:
        first = failed[0]
        message = first.message.replace("✗ differs:", f"✗ differs at {dims_text(first.dims)}:",
                                        1)
        mismatch = any(c.outputs and not c.ok for c in failed)
        kind = ErrorKind.VERIFY_MISMATCH if mismatch else ErrorKind.VERIFY_ERROR
        if len(failed) > 1:
            message += f" (and at {len(failed) - 1} more sizes)"
    return VerifyResult(
        module=module_name, ok=not failed, outputs=done[0].outputs, rtol=rtol, atol=atol,
        timings=timings, diagnostics=diagnostics, message=message, kind=kind,
        max_abs_err=worst, sizes=done,
    )

"""Verify one linalg-on-tensors module: lower to LLVM, JIT, run on the inputs, compare with eager.

    verify_linalg_module(linalg, fn, args, kwargs, module_name=...)  → VerifyResult

linalg-on-tensors → LLVM (worker/llvm.py) → JIT (jit.py) → call the public function on the
example inputs, flattened like torch.export → compare every output with `fn(*args, **kwargs)`
(compare.py). Problems come back in the result, never as exceptions.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir

from torch_mlir_lens.results import ErrorKind, LensError
from torch_mlir_lens.verify_results import VerifyResult
from torch_mlir_lens.worker.llvm import PipelineError, lower_linalg_to_llvm
from torch_mlir_lens.worker.locations import UserFiles
from torch_mlir_lens.worker.verify.compare import (
    compare_output,
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
) -> VerifyResult:
    """Lower linalg-on-tensors IR to LLVM, JIT it, run it on the inputs, compare with eager.

    `linalg` is IR text or a module (not modified: a copy is lowered). `mutate_ir` rewrites
    the IR text before it is parsed (tests alter a constant to see a mismatch reported).
    `user_files` places lowering diagnostics at the innermost frame in those files.
    `rtol`/`atol` override the per-dtype defaults for floating outputs. Problems come back in
    the result (`ok` False, `kind`, `diagnostics`), not as exceptions.
    """
    kwargs = dict(kwargs or {})
    timings: dict[str, float] = {}
    start = time.perf_counter()

    def lap(name: str, t0: float) -> float:
        now = time.perf_counter()
        timings[name] = round(now - t0, 6)
        return now

    try:
        t = time.perf_counter()
        module = private_copy(linalg, mutate_ir, context)
        sig = function_signature(module, func_name)
        inputs = flat_tensors((tuple(args), kwargs))
        _check_inputs(sig, inputs)
        lower_linalg_to_llvm(module, user_files=user_files)
        t = lap("lower_llvm", t)
        engine = jit(module, opt_level)
        link(engine, sig.name, module)
        t = lap("jit", t)
        actual = run_compiled(engine, sig, inputs)
        t = lap("run", t)
        del engine
        try:
            expected = run_eager(fn, args, kwargs)
        except Exception as exc:  # the user's code: anything can happen
            raise LensError(ErrorKind.VERIFY_ERROR, f"eager run failed: {exc!r}") from exc
        t = lap("eager", t)
    except LensError as exc:
        lap("total", start)
        return _error_result(module_name, exc, timings, rtol, atol)
    except ir.MLIRError as exc:  # parsing the (mutated) IR text
        lap("total", start)
        err = LensError(ErrorKind.LOWERING_ERROR, f"invalid IR: {exc}")
        return _error_result(module_name, err, timings, rtol, atol)
    if len(actual) != len(expected):
        lap("total", start)
        err = LensError(
            ErrorKind.VERIFY_ERROR,
            f"the compiled function returns {len(actual)} tensors, eager {len(expected)}",
        )
        return _error_result(module_name, err, timings, rtol, atol)
    outputs = [
        compare_output(i, reinterpret_like(a, e), e, rtol, atol)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True))
    ]
    lap("compare", t)
    lap("total", start)
    ok = all(o.ok for o in outputs)
    return VerifyResult(
        module=module_name, ok=ok, outputs=outputs, rtol=rtol, atol=atol, timings=timings,
        diagnostics=[] if ok else mismatch_diagnostics(outputs),
        message=verdict_message(outputs),
        kind=None if ok else ErrorKind.VERIFY_MISMATCH,
        max_abs_err=max((o.max_abs_err for o in outputs), default=0.0),
    )

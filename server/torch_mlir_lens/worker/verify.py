"""Verify: run the lowered IR and compare it with eager PyTorch.

linalg-on-tensors → LLVM (worker/llvm.py) → JIT (torch-mlir's ExecutionEngine) → call the
public function on the example inputs → compare every output with `fn(*args, **kwargs)`.

The compiled code `malloc`s its results; they are copied into torch tensors and freed here, so
repeated verification does not grow memory. A JIT crash kills the process: run this in the
worker.
"""

from __future__ import annotations

import ctypes
import io
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree
from torch_mlir import ir
from torch_mlir.execution_engine import ExecutionEngine

from torch_mlir_lens.results import ErrorKind, LensDiagnostic, LensError, Severity
from torch_mlir_lens.worker.llvm import (
    PipelineError,
    external_functions,
    lower_linalg_to_llvm,
    public_func_ops,
)
from torch_mlir_lens.worker.locations import UserFiles
from torch_mlir_lens.worker.mlir_diagnostics import captured

# ---------------------------------------------------------------------------------------------
# Result shapes


@dataclass
class VerifyOutput:
    """The comparison of one (flattened) output with its eager value."""

    index: int
    shape: list[int]
    dtype: str  # torch dtype name of the eager value, e.g. "float32"
    max_abs_err: float
    max_rel_err: float  # over elements whose eager value is non-zero
    worst_index: list[int]  # the element furthest from (or most beyond) its tolerance
    ok: bool
    message: str
    rtol: float = 0.0  # the tolerances applied to this output
    atol: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "max_abs_err": _json_float(self.max_abs_err),
            "max_rel_err": _json_float(self.max_rel_err),
            "worst_index": list(self.worst_index),
            "ok": self.ok,
            "message": self.message,
            "rtol": self.rtol,
            "atol": self.atol,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerifyOutput:
        return cls(
            index=data["index"],
            shape=list(data.get("shape", [])),
            dtype=data.get("dtype", ""),
            max_abs_err=_from_json_float(data.get("max_abs_err", 0.0)),
            max_rel_err=_from_json_float(data.get("max_rel_err", 0.0)),
            worst_index=list(data.get("worst_index", [])),
            ok=data["ok"],
            message=data.get("message", ""),
            rtol=data.get("rtol", 0.0),
            atol=data.get("atol", 0.0),
        )


@dataclass
class VerifyResult:
    """The verdict of one verification.

    `ok` is True only when every output matches. `kind` is None when ok, else an ErrorKind:
    "verify-mismatch" (compared, differs), "lowering-error" / "unsupported-op" (the IR could
    not be built or lowered; see `diagnostics`), "verify-error" (inputs, eager or JIT failed).
    `rtol`/`atol` are the requested tolerances (None: per-dtype defaults, see each output).
    `timings` keys (seconds): lower_llvm, jit, run, eager, compare, total (+ any from the
    caller, e.g. export).
    """

    module: str
    ok: bool
    outputs: list[VerifyOutput] = field(default_factory=list)
    rtol: float | None = None
    atol: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    diagnostics: list[LensDiagnostic] = field(default_factory=list)
    message: str = ""
    kind: str | None = None
    max_abs_err: float = 0.0
    # On a mismatch, when found: the first user line whose values differ (divergence.py):
    # {"file", "line", "shape", "dtype", "max_abs_err", "worst_index", "message"}.
    divergence: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "ok": self.ok,
            "outputs": [o.to_json() for o in self.outputs],
            "rtol": self.rtol,
            "atol": self.atol,
            "timings": self.timings,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "message": self.message,
            "kind": self.kind,
            "max_abs_err": _json_float(self.max_abs_err),
            "divergence": self.divergence,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerifyResult:
        return cls(
            module=data["module"],
            ok=data["ok"],
            outputs=[VerifyOutput.from_json(o) for o in data.get("outputs", [])],
            rtol=data.get("rtol"),
            atol=data.get("atol"),
            timings=data.get("timings", {}),
            diagnostics=[LensDiagnostic.from_json(d) for d in data.get("diagnostics", [])],
            message=data.get("message", ""),
            kind=data.get("kind"),
            max_abs_err=_from_json_float(data.get("max_abs_err", 0.0)),
            divergence=data.get("divergence"),
        )


def _json_float(value: float) -> float | str:
    """JSON has no inf/nan: send them as strings."""
    return value if math.isfinite(value) else str(value)


def _from_json_float(value: float | str) -> float:
    return float(value)


# ---------------------------------------------------------------------------------------------
# Tolerances

# Why these: the compiled code computes the same math in a different order than eager's
# kernels (oneDNN / MKL blocked, vectorized reductions vs plain sequential loops). The error of
# a K-term sum grows like K·eps·Σ|terms|, so it scales with the *terms*, not the result: where
# terms cancel, the result is small and its absolute error is not. Measured here: the sum of
# 512 N(0,1) values differs by 1.7e-5 from eager at an output of ~0.7. So for float32, rtol
# 1e-5 (≈ 84 ulps; torch.testing uses 1.3e-6 for single ops) and atol 1e-4 (10× torch.testing's
# 1e-5) for cancellation; a wrong lowering is off by far more than that. Half types: rtol of a
# few ulps (11 mantissa bits for f16, 8 for bf16), atol alike since compiled code may also
# accumulate in the narrow type. Integers and booleans must be exact.
_FLOAT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-5, 1e-4),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


def default_tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing a compiled output of `dtype` with eager: exact for ints/bool."""
    if dtype in _FLOAT_TOLERANCES:
        return _FLOAT_TOLERANCES[dtype]
    if dtype.is_floating_point or dtype.is_complex:
        return _FLOAT_TOLERANCES[torch.float32]
    return (0.0, 0.0)


# ---------------------------------------------------------------------------------------------
# Signature of the compiled function

# MLIR element type → (ctypes storage type, torch dtype). f16/bf16 travel as raw 16-bit ints
# (numpy has no bfloat16 without ml_dtypes); i1 is one byte per element in memory.
_ELEMENT_TYPES: dict[str, tuple[Any, torch.dtype]] = {
    "f64": (ctypes.c_double, torch.float64),
    "f32": (ctypes.c_float, torch.float32),
    "f16": (ctypes.c_int16, torch.float16),
    "bf16": (ctypes.c_int16, torch.bfloat16),
    "i1": (ctypes.c_bool, torch.bool),
    "i8": (ctypes.c_int8, torch.int8),
    "ui8": (ctypes.c_uint8, torch.uint8),
    "i16": (ctypes.c_int16, torch.int16),
    "i32": (ctypes.c_int32, torch.int32),
    "i64": (ctypes.c_int64, torch.int64),
}


@dataclass(frozen=True)
class TensorSig:
    """Rank and element type of one argument or result of the compiled function."""

    shape: tuple[int | None, ...]  # None for a dynamic dimension
    element: str  # MLIR spelling: "f32", "i1", ...

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def ctype(self) -> Any:
        return _ELEMENT_TYPES[self.element][0]

    @property
    def torch_dtype(self) -> torch.dtype:
        return _ELEMENT_TYPES[self.element][1]


@dataclass(frozen=True)
class FuncSig:
    name: str
    inputs: tuple[TensorSig, ...]
    results: tuple[TensorSig, ...]


def _tensor_sig(ty: ir.Type) -> TensorSig:
    # Types come back already downcast in these bindings.
    if not isinstance(ty, ir.RankedTensorType):
        raise LensError(ErrorKind.VERIFY_ERROR, f"cannot run a function that takes or returns {ty}")
    tensor = ty
    element = str(tensor.element_type)
    if element not in _ELEMENT_TYPES:
        raise LensError(
            ErrorKind.VERIFY_ERROR, f"element type {element} is not supported by Verify"
        )
    shape = tuple(
        None if tensor.is_dynamic_dim(i) else tensor.get_dim_size(i) for i in range(tensor.rank)
    )
    return TensorSig(shape, element)


def function_signature(module: ir.Module, name: str | None = None) -> FuncSig:
    """The signature of the function to run: `name`, else "main", else the only public one."""
    funcs = public_func_ops(module)
    names = [ir.StringAttr(f.attributes["sym_name"]).value for f in funcs]
    if name is None:
        name = "main" if "main" in names else (names[0] if len(names) == 1 else None)
    if name is None or name not in names:
        raise LensError(
            ErrorKind.VERIFY_ERROR, f"no function to run in the module (public: {names})"
        )
    func = funcs[names.index(name)]
    fty = func.attributes["function_type"].value
    assert isinstance(fty, ir.FunctionType)
    return FuncSig(
        name,
        tuple(_tensor_sig(t) for t in fty.inputs),
        tuple(_tensor_sig(t) for t in fty.results),
    )


# ---------------------------------------------------------------------------------------------
# Calling the JIT-compiled function


def _descriptor_type(sig: TensorSig) -> type[ctypes.Structure]:
    """The ctypes layout of a ranked memref descriptor (what the C interface passes)."""
    fields: list[tuple[str, Any]] = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64),
    ]
    if sig.rank:
        fields += [("shape", ctypes.c_int64 * sig.rank), ("strides", ctypes.c_int64 * sig.rank)]
    return type("MemRefDescriptor", (ctypes.Structure,), {"_fields_": fields})


def _storage_array(tensor: torch.Tensor) -> np.ndarray:
    """A C-contiguous numpy view of `tensor`'s bytes (16-bit floats as raw integers)."""
    t = tensor.detach().cpu().contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.view(torch.int16)
    return np.ascontiguousarray(t.numpy())


def _input_descriptor(array: np.ndarray, sig: TensorSig) -> ctypes.Structure:
    desc = _descriptor_type(sig)()
    desc.allocated = array.ctypes.data
    desc.aligned = array.ctypes.data
    desc.offset = 0
    if sig.rank:
        desc.shape = (ctypes.c_int64 * sig.rank)(*array.shape)
        desc.strides = (ctypes.c_int64 * sig.rank)(*(s // array.itemsize for s in array.strides))
    return desc


def _results_struct(results: Sequence[TensorSig]) -> ctypes.Structure:
    """One struct holding every result descriptor, in order (how the C interface returns)."""
    fields = [(f"r{i}", _descriptor_type(sig)) for i, sig in enumerate(results)]
    return type("Results", (ctypes.Structure,), {"_fields_": fields})()


_LIBC = ctypes.CDLL(None)
_LIBC.free.argtypes = [ctypes.c_void_p]
_LIBC.free.restype = None
# finalize-memref-to-llvm gives memref.get_global buffers this fake allocated pointer.
_GLOBAL_SENTINEL = 0xDEADBEEF


def _result_tensor(desc: ctypes.Structure, sig: TensorSig) -> torch.Tensor:
    """Copy one result buffer into a fresh torch tensor (the buffer is freed afterwards)."""
    if sig.rank:
        shape = tuple(desc.shape)
        strides = tuple(desc.strides)
    else:
        shape, strides = (), ()
    dtype = sig.torch_dtype
    itemsize = ctypes.sizeof(sig.ctype)
    if any(d == 0 for d in shape) or not desc.aligned:
        return torch.empty(shape, dtype=dtype)
    base = desc.aligned + desc.offset * itemsize
    # Extent in elements covered by the strided view, to wrap exactly that memory.
    extent = 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True))
    raw = np.ctypeslib.as_array((sig.ctype * extent).from_address(base))
    view = np.lib.stride_tricks.as_strided(
        raw, shape=shape, strides=tuple(s * itemsize for s in strides)
    )
    out = torch.from_numpy(np.array(view, copy=True))
    return out.view(dtype) if dtype in (torch.float16, torch.bfloat16) else out


def _free_results(results: ctypes.Structure, count: int, keep: set[int]) -> None:
    """Free each distinct result buffer the compiled code malloc'ed (never inputs/globals)."""
    freed: set[int] = set(keep)
    for i in range(count):
        ptr = getattr(results, f"r{i}").allocated
        if not ptr or ptr == _GLOBAL_SENTINEL or ptr in freed:
            continue
        freed.add(ptr)
        _LIBC.free(ptr)


def run_compiled(
    engine: ExecutionEngine, sig: FuncSig, inputs: Sequence[torch.Tensor]
) -> list[torch.Tensor]:
    """Call the JIT-compiled function once; returns its results as torch tensors."""
    arrays = [_storage_array(t) for t in inputs]
    descs = [_input_descriptor(a, s) for a, s in zip(arrays, sig.inputs, strict=True)]
    arg_ptrs = [ctypes.pointer(ctypes.pointer(d)) for d in descs]
    if not sig.results:
        engine.invoke(sig.name, *arg_ptrs)
        return []
    results = _results_struct(sig.results)
    engine.invoke(sig.name, ctypes.pointer(ctypes.pointer(results)), *arg_ptrs)
    try:
        return [
            _result_tensor(getattr(results, f"r{i}"), s) for i, s in enumerate(sig.results)
        ]
    finally:
        _free_results(results, len(sig.results), keep={a.ctypes.data for a in arrays})


# ---------------------------------------------------------------------------------------------
# Comparing


def _index_list(flat_index: int, shape: Sequence[int]) -> list[int]:
    if not shape:
        return []
    return [int(i) for i in np.unravel_index(flat_index, tuple(shape))]


def _error_arrays(actual: torch.Tensor, expected: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(|actual - expected|, |expected|) as float64; NaN==NaN and equal infinities count as 0."""
    a = actual.detach().to(torch.float64).numpy().reshape(-1)
    e = expected.detach().to(torch.float64).numpy().reshape(-1)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - e)
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    diff = np.where(same, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)  # one NaN, or inf vs -inf
    return diff, np.abs(e)


def compare_output(
    index: int, actual: torch.Tensor, expected: torch.Tensor,
    rtol: float | None = None, atol: float | None = None,
) -> VerifyOutput:
    """Compare one compiled output with its eager value: shape, dtype, then every element.

    An element matches when |actual - expected| <= atol + rtol * |expected| (as torch.isclose).
    Given tolerances apply to floating outputs; integers and booleans are always exact.
    """
    shape = list(expected.shape)
    dtype = str(expected.dtype).removeprefix("torch.")
    d_rtol, d_atol = default_tolerances(expected.dtype)
    if expected.dtype.is_floating_point or expected.dtype.is_complex:
        rtol = d_rtol if rtol is None else rtol
        atol = d_atol if atol is None else atol
    else:
        rtol, atol = d_rtol, d_atol

    def failed(message: str) -> VerifyOutput:
        return VerifyOutput(index, shape, dtype, math.inf, math.inf, [], False, message, rtol, atol)

    if list(actual.shape) != shape:
        return failed(f"output {index}: shape {list(actual.shape)}, eager {shape}")
    if actual.dtype != expected.dtype:
        got = str(actual.dtype).removeprefix("torch.")
        return failed(f"output {index}: dtype {got}, eager {dtype}")
    if expected.dtype.is_complex:
        return failed(f"output {index}: complex outputs are not compared")
    if expected.numel() == 0:
        return VerifyOutput(index, shape, dtype, 0.0, 0.0, [], True, f"output {index}: empty",
                            rtol, atol)
    diff, mag = _error_arrays(actual, expected)
    # A NaN or infinite eager value tolerates nothing but itself (diff is 0 when equal).
    tol = np.where(np.isfinite(mag), atol + rtol * np.where(np.isfinite(mag), mag, 0.0), 0.0)
    bad = diff > tol
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / tol)  # how far beyond its tolerance
        rel = np.where(mag > 0, diff / np.where(mag > 0, mag, 1.0), 0.0)
        rel = np.where(np.isnan(rel), 0.0, rel)
    worst = int(np.argmax(ratio)) if bad.any() else int(np.argmax(diff))
    ok = not bool(bad.any())
    out = VerifyOutput(
        index, shape, dtype, float(diff.max()), float(rel.max()),
        _index_list(worst, shape), ok, "", rtol, atol,
    )
    out.message = _output_message(out, float(diff[worst]), int(bad.sum()), diff.size)
    return out


def _fmt(x: float) -> str:
    return f"{x:.2g}" if math.isfinite(x) else str(x)


def _output_message(out: VerifyOutput, worst_err: float, n_bad: int, n: int) -> str:
    if out.ok:
        return f"output {out.index}: matches (max err {_fmt(out.max_abs_err)})"
    return (
        f"output {out.index}: max err {_fmt(worst_err)} at {out.worst_index} "
        f"({n_bad} of {n} elements beyond rtol={out.rtol:g}, atol={out.atol:g})"
    )


def verdict_message(outputs: Sequence[VerifyOutput]) -> str:
    """The one-line verdict: "✓ matches eager (max err 2e-07)" or "✗ differs: output 0, ..."."""
    bad = [o for o in outputs if not o.ok]
    if not bad:
        errs = [o.max_abs_err for o in outputs]
        return f"✓ matches eager (max err {_fmt(max(errs, default=0.0))})"
    first = bad[0]
    more = f" (+{len(bad) - 1} more outputs)" if len(bad) > 1 else ""
    if not first.worst_index and not math.isfinite(first.max_abs_err):
        return f"✗ differs: {first.message}{more}"
    detail = first.message.split(": ", 1)[1].split(" (", 1)[0]
    return f"✗ differs: output {first.index}, {detail}{more}"


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


def _reinterpret_like(actual: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Signless MLIR integers are read as signed: view as eager's unsigned type if it has one."""
    if (
        actual.dtype != expected.dtype
        and not actual.dtype.is_floating_point and actual.dtype != torch.bool
        and not expected.dtype.is_floating_point and expected.dtype != torch.bool
        and actual.element_size() == expected.element_size()
    ):
        return actual.view(expected.dtype)
    return actual


# ---------------------------------------------------------------------------------------------
# The entry point


def _parse(
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
        module = _parse(linalg, mutate_ir, context)
        sig = function_signature(module, func_name)
        inputs = flat_tensors((tuple(args), kwargs))
        _check_inputs(sig, inputs)
        lower_linalg_to_llvm(module, user_files=user_files)
        t = lap("lower_llvm", t)
        engine = jit(module, opt_level)
        _link(engine, sig.name, module)
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
        compare_output(i, _reinterpret_like(a, e), e, rtol, atol)
        for i, (a, e) in enumerate(zip(actual, expected, strict=True))
    ]
    lap("compare", t)
    lap("total", start)
    ok = all(o.ok for o in outputs)
    return VerifyResult(
        module=module_name, ok=ok, outputs=outputs, rtol=rtol, atol=atol, timings=timings,
        diagnostics=[] if ok else _mismatch_diagnostics(outputs),
        message=verdict_message(outputs),
        kind=None if ok else ErrorKind.VERIFY_MISMATCH,
        max_abs_err=max((o.max_abs_err for o in outputs), default=0.0),
    )


def jit(module: ir.Module, opt_level: int = 0) -> ExecutionEngine:
    """JIT-compile an LLVM-dialect module; failures become LensError("verify-error")."""
    with captured(module.context) as diags:
        try:
            return ExecutionEngine(module, opt_level=opt_level)
        except RuntimeError as exc:
            detail = "; ".join(d.message for d in diags)
            message = f"JIT compilation failed: {exc}" + (f" ({detail})" if detail else "")
            raise LensError(ErrorKind.VERIFY_ERROR, message) from exc


def _link(engine: ExecutionEngine, name: str, module: ir.Module) -> None:
    """Materialize `name` now: the JIT resolves symbols lazily, at the first lookup."""
    try:
        engine.lookup(name)
    except RuntimeError as exc:
        externals = ", ".join(external_functions(module)) or "none"
        raise LensError(
            ErrorKind.VERIFY_ERROR,
            f"JIT could not link {name}: a symbol was not found (external functions: "
            f"{externals})",
        ) from exc


def _mismatch_diagnostics(outputs: Sequence[VerifyOutput]) -> list[LensDiagnostic]:
    """One diagnostic per differing output (the caller places them on the module)."""
    return [
        LensDiagnostic(
            severity=Severity.ERROR, message=f"compiled result differs from eager: {o.message}",
            kind=ErrorKind.VERIFY_MISMATCH, target="llvm",
        )
        for o in outputs if not o.ok
    ]

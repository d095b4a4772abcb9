"""JIT-compile an LLVM-dialect module and call its public function through the C interface.

The memref descriptors of the C interface are torch-mlir's own (`torch_mlir.runtime`): inputs
are described by `get_ranked_memref_descriptor`, results come back in empty descriptors of
`make_nd_memref_descriptor` / `make_zero_d_memref_descriptor` and are read with
`ranked_memref_to_numpy`. What is ours: the function's signature (which ctypes type each MLIR
element type travels as), copying each result into a torch tensor, and freeing the buffers the
compiled code `malloc`ed, so repeated runs do not grow memory. A JIT crash kills the process:
run this in the worker.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch_mlir import ir
from torch_mlir.execution_engine import ExecutionEngine
from torch_mlir.runtime import (
    get_ranked_memref_descriptor,
    make_nd_memref_descriptor,
    make_zero_d_memref_descriptor,
    move_aligned_ptr_by_offset,
    ranked_memref_to_numpy,
)

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.worker.ir.mlir_diagnostics import captured
from torch_mlir_lens.worker.stages.llvm import external_functions, public_func_ops
from torch_mlir_lens.worker.verify.link_errors import captured_native_stderr, link_error_message

# MLIR element type → (ctypes storage type, torch dtype). f16/bf16 travel as raw 16-bit ints
# (numpy has no bfloat16 without ml_dtypes); i1 is one byte per element in memory.
ELEMENT_TYPES: dict[str, tuple[Any, torch.dtype]] = {
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
        return ELEMENT_TYPES[self.element][0]

    @property
    def torch_dtype(self) -> torch.dtype:
        return ELEMENT_TYPES[self.element][1]


@dataclass(frozen=True)
class FuncSig:
    """The name, argument and result types of the function to call."""

    name: str
    inputs: tuple[TensorSig, ...]
    results: tuple[TensorSig, ...]


def _tensor_sig(ty: ir.Type) -> TensorSig:
    # Types come back already downcast in these bindings.
    if not isinstance(ty, ir.RankedTensorType):
        raise LensError(ErrorKind.VERIFY_ERROR, f"cannot run a function that takes or returns {ty}")
    tensor = ty
    element = str(tensor.element_type)
    if element not in ELEMENT_TYPES:
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
    if sig.rank:
        return make_nd_memref_descriptor(sig.rank, sig.ctype)
    return make_zero_d_memref_descriptor(sig.ctype)


def _storage_array(tensor: torch.Tensor) -> np.ndarray:
    """A C-contiguous numpy view of `tensor`'s bytes (16-bit floats as raw integers)."""
    t = tensor.detach().cpu().contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.view(torch.int16)
    # ascontiguousarray makes a 0-d array 1-d; the descriptor's rank must stay the tensor's.
    return np.ascontiguousarray(t.numpy()).reshape(tuple(t.shape))


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
    shape = tuple(desc.shape) if sig.rank else ()
    dtype = sig.torch_dtype
    if any(d == 0 for d in shape) or not desc.aligned:
        return torch.empty(shape, dtype=dtype)
    if sig.rank:
        view = ranked_memref_to_numpy([desc])  # a strided view of the result's memory
    else:  # torch-mlir's reader expects shape and strides, which a 0-d descriptor lacks
        element = move_aligned_ptr_by_offset(desc.aligned, desc.offset)
        view = np.ctypeslib.as_array(element, shape=(1,)).reshape(())
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
    descs = [get_ranked_memref_descriptor(a) for a in arrays]
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


def jit(module: ir.Module, opt_level: int = 0) -> ExecutionEngine:
    """JIT-compile an LLVM-dialect module; failures become LensError("verify-error")."""
    with captured(module.context) as diags:
        try:
            return ExecutionEngine(module, opt_level=opt_level)
        except RuntimeError as exc:
            detail = "; ".join(d.message for d in diags)
            message = f"JIT compilation failed: {exc}" + (f" ({detail})" if detail else "")
            raise LensError(ErrorKind.VERIFY_ERROR, message) from exc


def link(engine: ExecutionEngine, name: str, module: ir.Module, opt_level: int = 0) -> None:
    """Materialize `name` now: the JIT resolves symbols lazily, at the first lookup. A failure
    names each symbol that was not found and why it was needed.

    LLVM prints the missing symbols to fd 2 only. Capturing fd 2 during the first lookup would
    also hide the "LLVM ERROR" line of a code generator that kills the process, so a failed
    link is repeated in a fresh engine (`opt_level`: the first one's) under capture: code
    generation went through once already.
    """
    try:
        engine.lookup(name)
        return
    except RuntimeError as exc:
        error = exc
    with captured_native_stderr() as llvm_text, contextlib.suppress(RuntimeError):
        ExecutionEngine(module, opt_level=opt_level).lookup(name)
    message = link_error_message(name, "".join(llvm_text), external_functions(module), str(error))
    raise LensError(ErrorKind.VERIFY_ERROR, message) from error

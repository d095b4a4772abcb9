"""On a mismatch: the first source line whose compiled values differ from eager.

Eager side: the exported program's graph, run node by node (torch.fx.Interpreter); each node's
`stack_trace` names the user's line. Compiled side: the linalg function is rewritten to also
return, for every user line, the last value computed there (one per shape/dtype), then lowered,
JIT-compiled and run once. Values are paired per (line, shape, dtype) and compared with the
usual tolerances; the diverging pair earliest in the graph names the line. With dynamic dims
a compiled type has `?` sizes: it pairs with the line's last eager value of that dtype whose
shape fits it (sizes equal where the type's are static), and a value whose run-time shape
differs from eager's diverges there.

A heuristic: a line's last value of a given shape is usually the same tensor on both sides
(each aten op lowers to linalg ops whose last one produces its result), but decompositions can
differ; unpaired values are ignored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir
from torch_mlir.dialects import func as func_d

from torch_mlir_lens.protocol.verify_results import Divergence
from torch_mlir_lens.worker.ir.locations import UserFiles, as_user_files, user_frames_of
from torch_mlir_lens.worker.stages.llvm import lower_linalg_to_llvm, public_func_ops
from torch_mlir_lens.worker.verify.compare import compare_output
from torch_mlir_lens.worker.verify.jit import (
    ELEMENT_TYPES,
    FuncSig,
    function_signature,
    jit,
    run_compiled,
)
from torch_mlir_lens.worker.verify.linalg import private_copy

Key = tuple[str, int, tuple[int, ...], torch.dtype]  # file, line, shape, dtype
# The compiled side's: a `?` size is None.
TypeKey = tuple[str, int, tuple[int | None, ...], torch.dtype]

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_SKIP_OPS = {"arith.constant", "tensor.empty", "ml_program.global_load_const"}


# --- eager values per line -------------------------------------------------------------------


def _innermost_user_frame(stack_trace: str, users: UserFiles) -> tuple[str, int] | None:
    """The last (innermost) frame of a Python stack trace that is in the user's files."""
    frames = [(f, int(n)) for f, n in _FRAME.findall(stack_trace or "") if f in users]
    return frames[-1] if frames else None


def eager_values(program: Any, args: Sequence[Any], kwargs: dict[str, Any],
                 users: UserFiles) -> dict[Key, tuple[int, torch.Tensor]]:
    """(file, line, shape, dtype) → (graph position, value) of the last such node per line."""
    flat = pytree.tree_leaves((tuple(args), dict(kwargs)))
    gm = _runnable_graph(program, len(flat))
    found: dict[Key, tuple[int, torch.Tensor]] = {}
    position = {node: i for i, node in enumerate(gm.graph.nodes)}

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, node: torch.fx.Node) -> Any:
            value = super().run_node(node)
            if node.op == "call_function" and isinstance(value, torch.Tensor):
                frame = _innermost_user_frame(node.meta.get("stack_trace", ""), users)
                if frame is not None:
                    key = (frame[0], frame[1], tuple(value.shape), value.dtype)
                    found[key] = (position[node], value.detach().clone())
            return value

    with torch.no_grad():
        _Recorder(gm).run(*flat)
    return found


def _runnable_graph(program: Any, n_inputs: int) -> torch.fx.GraphModule:
    """A graph module taking just the user inputs.

    The FX importer's `import_frozen_program` freezes the program in place (parameters become
    get_attr nodes), after which `program.module()` fails: the frozen graph runs as is.
    """
    gm = program.graph_module
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) == n_inputs:
        return gm
    return program.module()


# --- compiled values per line ----------------------------------------------------------------


def _value_key(value: ir.Value, op: ir.Operation, users: UserFiles) -> TypeKey | None:
    ty = value.type
    if not isinstance(ty, ir.RankedTensorType):
        return None
    element = str(ty.element_type)
    if element not in ELEMENT_TYPES:
        return None
    frames = user_frames_of(str(op.location), users)
    if not frames:
        return None
    file, line = frames[0]
    shape = tuple(None if ty.is_dynamic_dim(i) else ty.get_dim_size(i) for i in range(ty.rank))
    return (file, line, shape, ELEMENT_TYPES[element][1])


def _compiled_values(func: ir.Operation, users: UserFiles) -> dict[TypeKey, ir.Value]:
    """The last value of each (line, shape, dtype) among the function's top-level ops."""
    found: dict[TypeKey, ir.Value] = {}
    for op in func.regions[0].blocks[0].operations:
        operation = op.operation
        if operation.name in _SKIP_OPS:
            continue
        for value in operation.results:
            key = _value_key(value, operation, users)
            if key is not None:
                found[key] = value
    return found


def _return_also(func: ir.Operation, extra: list[ir.Value]) -> None:
    """Append `extra` to the function's results (return op and type)."""
    block = func.regions[0].blocks[0]
    ret = list(block.operations)[-1].operation
    operands = list(ret.operands) + extra
    with ir.InsertionPoint(ret), ret.location:
        func_d.ReturnOp(operands)
    ret.erase()
    fty = func.attributes["function_type"].value
    ctx = func.context
    new_type = ir.FunctionType.get(list(fty.inputs), [v.type for v in operands], context=ctx)
    func.attributes["function_type"] = ir.TypeAttr.get(new_type, context=ctx)


def _eager_match(key: TypeKey, eager: dict[Key, tuple[int, torch.Tensor]]) -> Key | None:
    """The eager value a compiled one stands for: the same shape when it is static; with `?`
    sizes, the line's last value of that dtype whose shape fits."""
    file, line, shape, dtype = key
    static = tuple(s for s in shape if s is not None)
    if len(static) == len(shape):
        exact = (file, line, static, dtype)
        return exact if exact in eager else None
    fitting = [k for k in eager if k[0] == file and k[1] == line and k[3] == dtype
               and len(k[2]) == len(shape)
               and all(s is None or s == e for s, e in zip(shape, k[2], strict=True))]
    return max(fitting, key=lambda k: eager[k][0], default=None)


# --- the search ------------------------------------------------------------------------------


def first_divergence(
    linalg: str | ir.Module,
    program: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any] | None,
    *,
    user_files: Iterable[str] | UserFiles,
    rtol: float | None = None,
    atol: float | None = None,
    opt_level: int = 0,
    mutate_ir: Callable[[str], str] | None = None,
    run: Callable[[ir.Module, list[torch.Tensor]], list[torch.Tensor]] | None = None,
) -> Divergence | None:
    """The earliest user line whose compiled value differs from eager, or None if none does.

    `linalg` (and `mutate_ir`) as for verify_linalg_module; `program` is the ExportedProgram
    that `linalg` was lowered from. `run(module, inputs)` compiles and runs the instrumented
    Linalg module another way (IREE: worker/iree/); by default it is lowered to LLVM and
    JIT-compiled. Raises LensError if lowering or the JIT fails.
    """
    users = as_user_files(user_files)
    kwargs = dict(kwargs or {})
    eager = eager_values(program, args, kwargs, users)
    module = private_copy(linalg, mutate_ir, None)
    sig = function_signature(module)
    func = next(f for f in public_func_ops(module)
                if ir.StringAttr(f.attributes["sym_name"]).value == sig.name)
    compiled = _compiled_values(func, users)
    pairs = sorted(((k, e) for k in compiled if (e := _eager_match(k, eager)) is not None),
                   key=lambda pair: eager[pair[1]][0])
    if not pairs:
        return None
    keys = [e for _, e in pairs]
    _return_also(func, [compiled[k] for k, _ in pairs])
    inputs = [t for t in pytree.tree_leaves((tuple(args), kwargs)) if isinstance(t, torch.Tensor)]
    if run is not None:
        outputs = run(module, inputs)
    else:
        sig = function_signature(module, sig.name)
        lower_linalg_to_llvm(module, user_files=users)
        engine = jit(module, opt_level)
        outputs = run_compiled(engine, FuncSig(sig.name, sig.inputs, sig.results), inputs)
        del engine
    extra = outputs[len(outputs) - len(keys):]
    for key, actual in zip(keys, extra, strict=True):
        expected = eager[key][1]
        out = compare_output(0, actual, expected, rtol, atol)
        if not out.ok:
            file, line = key[0], key[1]
            if out.worst_index or math.isfinite(out.max_abs_err):
                detail = (f"{out.dtype} {out.shape}, max err {out.max_abs_err:.2g} at "
                          f"{out.worst_index}")
            else:  # not even the shape (or dtype) agrees
                detail = out.message.removeprefix("output 0: ").replace(
                    "shape", f"{out.dtype} shape", 1)
            return Divergence(
                file=file, line=line, shape=out.shape, dtype=out.dtype,
                max_abs_err=out.max_abs_err, worst_index=out.worst_index,
                message=f"compiled values first differ from eager here: {detail}",
            )
    return None

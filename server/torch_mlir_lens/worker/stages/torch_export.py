"""torch.export a module, then import the program into MLIR (the FX importer, weights frozen).

    export_program(fn, args, kwargs, user_files=...)   → ExportedProgram, or LensError
    import_program(program, users)                      → the raw MLIR module op, or LensError

Both failures name one clear line (+ a hint) and the user's line: the innermost frame in the
user's files, from the traceback or from the stack trace torch writes into its message.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import sys
import traceback
from collections.abc import Iterable
from typing import Any

import torch
from torch_mlir.extras.fx_decomp_util import get_decomposition_table
from torch_mlir.extras.fx_importer import FxImporter

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.worker.ir.crash_guard import note_weights
from torch_mlir_lens.worker.ir.library_frames import library_files
from torch_mlir_lens.worker.ir.literals import LiteralHooks
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.ir.mlir_diagnostics import captured
from torch_mlir_lens.worker.rewrites.apply import remember
from torch_mlir_lens.worker.shims.custom_ops import run_decompositions
from torch_mlir_lens.worker.shims.frozen_import import import_frozen
from torch_mlir_lens.worker.shims.region_origins import restore_region_origins
from torch_mlir_lens.worker.shims.scatter_dims import positive_scatter_dims
from torch_mlir_lens.worker.shims.slice_bounds import clamped_slice_scatters
from torch_mlir_lens.worker.shims.sym_minmax import prim_min_max
from torch_mlir_lens.worker.shims.topk_sorted import sorted_topk
from torch_mlir_lens.worker.stages import export_errors
from torch_mlir_lens.worker.stages.pipeline import new_context

# One frame of a Python traceback, as torch also writes it into node stack traces.
FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')

_HINTS: tuple[tuple[str, str], ...] = (
    ("data-dependent", "control flow or a shape depends on tensor values; use torch.cond / "
                       "torch.where, or mark the value with torch._check"),
    ("GuardOnDataDependentSymNode", "control flow depends on tensor values; use torch.cond / "
                                    "torch.where"),
    ("numpy", "tensors cannot leave torch during export (.numpy(), .tolist(), .item() on "
              "computed values)"),
)


def as_module(fn: Any) -> torch.nn.Module:
    """`fn` itself if it is a Module, else a small Module whose forward calls it."""
    if isinstance(fn, torch.nn.Module):
        return fn

    class FunctionModule(torch.nn.Module):
        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

    try:  # keep the function's parameter names so dynamic_shapes can name them
        sig = inspect.signature(fn)
        self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        FunctionModule.forward.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[self_param, *sig.parameters.values()])
    except (TypeError, ValueError):
        pass
    FunctionModule.__name__ = FunctionModule.__qualname__ = getattr(fn, "__name__", "function")
    return FunctionModule()


def _user_location(exc: BaseException, users: UserFiles) -> tuple[str | None, int | None]:
    """The innermost user frame: from the traceback, else from torch's user stack in the text."""
    file: str | None = None
    line: int | None = None
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:  # the cause chain: torch often re-raises
        seen.add(id(e))
        for fs in traceback.extract_tb(e.__traceback__):
            if fs.filename in users and fs.lineno is not None:
                file, line = fs.filename, fs.lineno
        if file is not None:
            return file, line
        e = e.__cause__ or e.__context__
    for m in FILE_LINE.finditer(str(exc)):
        if m.group(1) in users:
            file, line = m.group(1), int(m.group(2))  # last match: the innermost frame
    return file, line


def _export_message(exc: BaseException) -> str:
    text = str(exc).strip()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(first) > 300:
        first = first[:297] + "..."
    message = f"torch.export failed: {type(exc).__name__}: {first}" if first else (
        f"torch.export failed: {type(exc).__name__}")
    for needle, hint in _HINTS:
        if needle in text or needle in type(exc).__name__:
            return f"{message}\n{hint}"
    return message


def register_user_frames(module: torch.nn.Module, fn: Any, users: UserFiles) -> None:
    """Ask torch to keep the frames of the user's helper functions in node stack traces.

    Non-strict export records only frames named `forward` (plus registered "anchors"), so ops
    in a helper function or a wrapped plain function would map to the calling line, or to
    nothing. torch.fx.proxy's anchor set is private: skip silently if it is gone.
    """
    anchors = getattr(torch.fx.proxy, "_STACK_TRACE_ANCHORS", None)
    if not isinstance(anchors, set):
        return
    candidates: list[Any] = [fn]
    for cls in type(module).__mro__:
        candidates.extend(vars(cls).values())
    forward = getattr(type(module), "forward", None)
    candidates.extend(getattr(forward, "__globals__", {}).values())
    candidates.extend(getattr(fn, "__globals__", {}).values())
    libraries = library_files()
    for obj in candidates:
        members = list(vars(obj).values()) if inspect.isclass(obj) else [obj]
        for f in members:
            f = getattr(f, "__func__", f)
            code = getattr(f, "__code__", None)
            if code is not None and code.co_filename in users:
                anchors.add((code.co_filename, code.co_name))
                anchors.add((code.co_filename, "<lambda>"))
            elif code is not None and inspect.isfunction(f) \
                    and libraries.is_library(code.co_filename):
                _register_library_function(f, anchors)  # `resize(x)` from a library
    _register_library_helpers(module, anchors)


def _own_code(f: Any) -> Any:
    """The code of the function `f` names itself, or None for a decorator's closure standing
    in for it (`wrapper` in transformers' utils/generic.py): anchoring that would record the
    decorator's frame for every call it wraps, in place of the lines inside."""
    f = inspect.unwrap(f)
    code = getattr(f, "__code__", None)
    return code if code is not None and code.co_name == getattr(f, "__name__", None) else None


def _register_library_function(f: Any, anchors: set[Any]) -> None:
    """A library function the user's forward calls by name (`resize(x)`), and the functions of
    its file it may call on the way: the ops made inside are named at their lines there, not
    only at the user's call. (A library class's helpers imported from other files are not:
    a transformers model's ops would then sit in its shared attention and mask helpers
    instead of the modeling file's lines.)"""
    own = _own_code(f)
    if own is None:
        return
    file = own.co_filename
    anchors.add((file, own.co_name))
    module = sys.modules.get(getattr(inspect.unwrap(f), "__module__", "") or "")
    for value in list(vars(module).values()) if module is not None else []:
        code = _own_code(value) if inspect.isfunction(value) else None
        if code is not None and code.co_filename == file:
            anchors.add((file, code.co_name))


def _register_library_helpers(module: torch.nn.Module, anchors: set[Any]) -> None:
    """The same for the library classes the model is made of: the methods of each submodule's
    class (and its bases) and the functions of the files they live in, so that an op made in
    a library's helper (`self._attn(x)`) maps to the line inside it, not to the call."""
    libraries = library_files()
    seen: set[type] = set()
    files: set[str] = set()
    for sub in module.modules():
        for cls in type(sub).__mro__:
            if cls in seen:
                continue
            seen.add(cls)
            file = getattr(sys.modules.get(cls.__module__), "__file__", None)
            if not isinstance(file, str) or not libraries.is_library(file):
                continue
            files.add(file)
            for member in list(vars(cls).values()):
                member = getattr(member, "fget", None) or getattr(member, "__func__", member)
                code = getattr(member, "__code__", None)
                if code is not None and code.co_filename == file:
                    anchors.add((file, code.co_name))
            for value in list(vars(sys.modules[cls.__module__]).values()):
                code = getattr(value, "__code__", None)
                if inspect.isfunction(value) and code is not None and code.co_filename == file:
                    anchors.add((file, code.co_name))


def export_program(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, *,
                   user_files: Iterable[str], strict: bool = False,
                   dynamic_shapes: Any = None, decompose: bool = True,
                   dynamic_at: tuple[str, int] | None = None, specialize: bool = False) -> Any:
    """torch.export the module (or function), then apply torch-mlir's decompositions.

    `specialize`: exported by draft_export, its data-dependent lines decided as the example
    decides them (rewrites/specialize.py, the `export.specialize` rewrite).

    The result is what the FX importer takes (and what the `fx` target prints). Any failure
    raises LensError("export-error") with one clear line (+ a hint) and the user's line
    (export_errors.py adds what torch suggests and the library lines; a dynamic dims problem
    is placed at `dynamic_at`, where the spec was written).
    """
    users = UserFiles(user_files)
    module = as_module(fn)
    register_user_frames(module, fn, users)
    noise = io.StringIO()
    try:
        # torch prints graph dumps on some failures; keep the worker's streams clean.
        with contextlib.redirect_stdout(noise), contextlib.redirect_stderr(noise):
            if specialize:
                from torch_mlir_lens.worker.rewrites.specialize import specialised_export

                program = specialised_export(module, tuple(args), dict(kwargs or {}),
                                             dynamic_shapes=dynamic_shapes, strict=strict)
            else:
                program = torch.export.export(module, tuple(args), dict(kwargs or {}),
                                              dynamic_shapes=dynamic_shapes, strict=strict)
            if decompose:  # + a library's opaque ops (transformers' grouped matmul)
                exported = program
                program = run_decompositions(exported, get_decomposition_table())
                restore_region_origins(exported, program)  # no_grad bodies' lines and calls
                remember(program, exported)  # rewrites decompose it again (worker/rewrites)
    except Exception as exc:  # torch raises many unrelated types here
        file, line = _user_location(exc, users)
        err = LensError(ErrorKind.EXPORT_ERROR, _export_message(exc), file=file, line=line)
        raise export_errors.explained(err, exc, fn=module, args=args, kwargs=dict(kwargs or {}),
                                      dynamic_shapes=dynamic_shapes, users=users,
                                      dynamic_at=dynamic_at) from exc
    return program


def import_program(program: Any, users: UserFiles, *, context: Any = None,
                   func_name: str = "main") -> Any:
    """The FX import of `program` into a fresh context (or `context`): the raw module op,
    its one function named `func_name`.

    Failures raise LensError("export-error"): frozen_import's own already name what is
    missing at the user's line; others (e.g. NotImplementedError for 'with_effects') are
    placed at the line of the graph node whose op the message names.
    """
    ctx = context if context is not None else new_context()
    hooks = LiteralHooks()
    importer = FxImporter(context=ctx, hooks=hooks)
    prim_min_max(program)  # the importer knows prim::min, not torch.sym_min
    try:
        with captured(ctx):
            import_frozen(importer, program, users=users, func_name=func_name)
    except LensError:
        raise
    except Exception as exc:
        text = str(exc).strip()
        file, line = _node_line_named_in(program, users, text)
        raise LensError(ErrorKind.EXPORT_ERROR,
                        f"torch-mlir cannot import the program: {type(exc).__name__}: "
                        f"{text.splitlines()[0] if text else ''}",
                        file=file, line=line) from exc
    module_op = importer.module.operation
    positive_scatter_dims(module_op)  # torch-mlir's scatter conversions crash on dim < 0
    sorted_topk(module_op)  # torch-mlir lowers topk only sorted; unsorted allows sorted
    clamped_slice_scatters(module_op)  # StableHLO counts to an unclamped end (bad_alloc)
    note_weights(ctx, hooks.stats["bytes"])  # decides whether passes run in a fork
    return module_op


def _node_line_named_in(program: Any, users: UserFiles,
                        message: str) -> tuple[str | None, int | None]:
    """The user line of the first graph node whose op the (importer) message names."""
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        name = getattr(node.target, "__name__", None) or str(node.target)
        if name and f"'{name}'" in message:
            trace = node.meta.get("stack_trace") or ""
            frames = [(f, int(n)) for f, n in FILE_LINE.findall(trace) if f in users]
            if frames:
                return frames[-1]
    return None, None

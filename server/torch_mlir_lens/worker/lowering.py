"""Export a module with torch.export, import it into MLIR once, lower it to every target.

    export_program(fn, args, kwargs, user_files=...)       → ExportedProgram (or LensError)
    ProgramLowerer(program, module_name=..., user_files=...)
        .lower("linalg")                                      → LowerResult (IR, map, diagnostics)
        .write_export("tosa", "out.mlir", bytecode=False)     → bytes written (atomic)
        .write_repro("linalg", "dir")                         → {"mlir_path", "command"}
    lower_module(fn, args, kwargs, targets=[...])            → [LowerResult], one export

The FX import happens once per lowerer and the torch-backend module is kept: every backend
works on a clone of it. Passes run through our own PassManager with diagnostics captured (never
torch-mlir's run_pipeline_with_repro_report: it prints to fd 2 and writes a repro file with
every weight into $TMPDIR).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
import shlex
import tempfile
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d
from torch_mlir.extras.fx_decomp_util import get_decomposition_table
from torch_mlir.extras.fx_importer import FxImporter
from torch_mlir.passmanager import PassManager

from torch_mlir_lens import culprits
from torch_mlir_lens.frames import FrameTable, SourceFrame
from torch_mlir_lens.results import (
    ErrorKind,
    IrLineMapping,
    LensDiagnostic,
    LensError,
    LowerResult,
    PassIr,
)
from torch_mlir_lens.targets import CUSTOM_TARGET, TARGETS, TORCH_BACKEND_PIPELINE
from torch_mlir_lens.worker import failures, ir_text, partial
from torch_mlir_lens.worker.frozen_import import import_frozen
from torch_mlir_lens.worker.library_frames import library_files
from torch_mlir_lens.worker.literals import LiteralHooks, mark_elided
from torch_mlir_lens.worker.locations import UserFiles
from torch_mlir_lens.worker.mlir_diagnostics import Diag, captured, error_diags

MLIR_TARGETS = ("raw", "torch", "linalg", "tosa", "stablehlo", "llvm")


@dataclass
class LowerOptions:
    """How to lower and print."""

    keep_weights: bool = False  # False: dense_resource blobs elided when printing
    debug_info: bool = False  # True: locations stay in the printed IR
    print_after_all: bool = False  # fill LowerResult.passes with the IR after each pass
    list_unsupported: bool = True  # on failure, list every unsupported op, not just the first
    strict: bool = False  # torch.export strict mode (used by lower_module)


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------


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


_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_HINTS: tuple[tuple[str, str], ...] = (
    ("data-dependent", "control flow or a shape depends on tensor values; use torch.cond / "
                       "torch.where, or mark the value with torch._check"),
    ("GuardOnDataDependentSymNode", "control flow depends on tensor values; use torch.cond / "
                                    "torch.where"),
    ("numpy", "tensors cannot leave torch during export (.numpy(), .tolist(), .item() on "
              "computed values)"),
)


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
    for m in _FILE_LINE.finditer(str(exc)):
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


def _register_user_frames(module: torch.nn.Module, fn: Any, users: UserFiles) -> None:
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
    for obj in candidates:
        members = list(vars(obj).values()) if inspect.isclass(obj) else [obj]
        for f in members:
            f = getattr(f, "__func__", f)
            code = getattr(f, "__code__", None)
            if code is not None and code.co_filename in users:
                anchors.add((code.co_filename, code.co_name))
                anchors.add((code.co_filename, "<lambda>"))


def export_program(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, *,
                   user_files: Iterable[str], strict: bool = False,
                   dynamic_shapes: Any = None, decompose: bool = True) -> Any:
    """torch.export the module (or function), then apply torch-mlir's decompositions.

    The result is what the FX importer takes (and what the `fx` target prints). Any failure
    raises LensError("export-error") with one clear line (+ a hint) and the user's line.
    """
    users = UserFiles(user_files)
    module = as_module(fn)
    _register_user_frames(module, fn, users)
    noise = io.StringIO()
    try:
        # torch prints graph dumps on some failures; keep the worker's streams clean.
        with contextlib.redirect_stdout(noise), contextlib.redirect_stderr(noise):
            program = torch.export.export(module, tuple(args), dict(kwargs or {}),
                                          dynamic_shapes=dynamic_shapes, strict=strict)
            if decompose:
                program = program.run_decompositions(get_decomposition_table())
    except Exception as exc:  # torch raises many unrelated types here
        file, line = _user_location(exc, users)
        raise LensError(ErrorKind.EXPORT_ERROR, _export_message(exc), file=file,
                        line=line) from exc
    return program


# ---------------------------------------------------------------------------------------------
# Lowering
# ---------------------------------------------------------------------------------------------


class _PassFailure(Exception):
    def __init__(self, errors: list[Diag], passes: list[PassIr] | None) -> None:
        super().__init__(errors[0].message if errors else "pass pipeline failed")
        self.errors = errors
        self.passes = passes


def _new_context() -> ir.Context:
    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    # IR printing with multithreading on can SIGABRT; there is one function anyway.
    ctx.enable_multithreading(False)
    ctx.emit_error_diagnostics = False
    return ctx


def parsing_context() -> ir.Context:
    """A context that can parse every IR we print or write, StableHLO and TMTensor included.

    The StableHLO and TMTensor dialects (the latter in Linalg IR: cumsum, scatter, sort) have
    no Python registration in this wheel: they are loaded only as dependencies of passes.
    Running the conversion passes once on an empty module loads them.
    """
    ctx = _new_context()
    with ctx, captured(ctx):
        empty = ir.Module.create(ir.Location.unknown(ctx))
        PassManager.parse("builtin.module(func.func(convert-torch-to-stablehlo,"
                          "convert-torch-to-tmtensor))", context=ctx).run(empty.operation)
    return ctx


def _read_pass_dumps(root: str) -> list[PassIr]:
    """The per-pass files of `enable_ir_printing(tree_printing_dir_path=...)`, in run order."""
    files = []
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if name.endswith(".mlir"):
                path = os.path.join(dirpath, name)
                counters = tuple(int(n) for n in re.findall(r"(\d+)_", name))
                files.append((os.stat(path).st_mtime_ns, counters[::-1], path, name))
    files.sort()
    passes = []
    for *_keys, path, name in files:
        pass_name = re.sub(r"^(\d+_)+", "", name)[: -len(".mlir")]
        with open(path, encoding="utf-8", errors="replace") as f:
            passes.append(PassIr(pass_name, f.read()))
    return passes


def run_pipeline(module_op: Any, pipeline: str, *, print_after_all: bool = False,
                 keep_weights: bool = False) -> list[PassIr] | None:
    """Run `pipeline` on `module_op` in place, diagnostics captured.

    Returns the IR after each pass when asked. A syntax error / unknown pass raises
    LensError("bad-pipeline"); a failing pass raises _PassFailure with the error diagnostics.
    """
    ctx = module_op.context
    with ctx, captured(ctx) as diags:
        try:
            pm = PassManager.parse(pipeline, context=ctx)
        except (ValueError, ir.MLIRError) as exc:
            detail = "; ".join(d.message for d in diags) or str(exc)
            raise LensError(ErrorKind.BAD_PIPELINE,
                            f"bad pass pipeline {pipeline!r}: {detail}") from exc
        if not print_after_all:
            try:
                pm.run(module_op.operation)
            except ir.MLIRError as exc:
                raise _PassFailure(error_diags(exc, diags), None) from exc
            return None
        with tempfile.TemporaryDirectory(prefix="torch-mlir-lens-passes-") as dump_dir:
            pm.enable_ir_printing(
                print_after_all=True, tree_printing_dir_path=dump_dir,
                large_resource_limit=None if keep_weights else ir_text.ELIDE_RESOURCES_OVER,
            )
            failure: ir.MLIRError | None = None
            try:
                pm.run(module_op.operation)
            except ir.MLIRError as exc:
                failure = exc
            passes = _read_pass_dumps(dump_dir)
        if not keep_weights:
            passes = [PassIr(p.name, mark_elided(p.ir)) for p in passes]
        if failure is not None:
            raise _PassFailure(error_diags(failure, diags), passes) from failure
        return passes


def _fx_text_and_map(program: Any, users: UserFiles
                     ) -> tuple[str, list[IrLineMapping], FrameTable]:
    """The program's ATen graph as PyTorch prints it, each node line mapped via stack_trace
    (user frames in the map, chains through library code in the frame table)."""
    text = program.graph_module.print_readable(print_output=False)
    nodes = {n.name: n for n in program.graph.nodes}
    mapping: list[IrLineMapping] = []
    table = FrameTable()
    libraries = library_files()
    assign = re.compile(r"^\s*(\w+)(?:\s*:\s*\"[^\"]*\")?\s*=")
    for index, line in enumerate(text.splitlines(), start=1):
        m = assign.match(line)
        node = nodes.get(m.group(1)) if m else None
        if node is None:
            continue
        trace = node.meta.get("stack_trace") or ""
        frames = [(f, int(n)) for f, n in _FILE_LINE.findall(trace) if f in users]
        for depth, (file, lineno) in enumerate(reversed(frames)):  # traceback: outer first
            mapping.append(IrLineMapping(index, file, lineno, depth))
        chain = [SourceFrame(f, int(n), f not in users) for f, n in reversed(
            _FILE_LINE.findall(trace)) if f in users or libraries.is_library(f)]
        if any(f.library for f in chain):
            table.add(index, chain)
    return text, mapping, table


class ProgramLowerer:
    """Lowers one exported program to any target; the FX import and torch pipeline run once."""

    def __init__(self, program: Any, *, module_name: str, user_files: Iterable[str],
                 module_file: str | None = None, module_line: int | None = None) -> None:
        """`module_file`/`module_line` (the class line), when given, locate the failures
        that have no user line of their own; otherwise those stay on the module (None)."""
        self.program = program
        self.module_name = module_name
        self.module_file = module_file
        self.module_line = module_line
        self.users = UserFiles(user_files)
        self.export_seconds: float | None = None  # set by lower_module (reported once)
        self._ctx: ir.Context | None = None
        self._raw: Any = None
        self._torch: Any = None
        self._torch_errors: list[Diag] | None = None
        self._lowered: dict[str, Any] = {}  # target (or pipeline) → lowered module op
        self._last_custom: str | None = None  # so "custom" can be exported after lower()
        self._spent: dict[str, float] = {}
        # target → (partial lowering or None, its diagnostics): a failed backend, listed once
        self._listing = failures.Failures(program, self.users)  # failed targets, listed once

    # -- building blocks ----------------------------------------------------------------------

    def _timed(self, key: str, start: float) -> None:
        self._spent[key] = self._spent.get(key, 0.0) + time.perf_counter() - start

    def raw_module(self) -> Any:
        """The FX-imported module (imported once). Import failures → LensError export-error."""
        if self._raw is None:
            start = time.perf_counter()
            self._ctx = _new_context()
            importer = FxImporter(context=self._ctx, hooks=LiteralHooks())
            try:
                with captured(self._ctx):
                    import_frozen(importer, self.program, users=self.users, func_name="main")
            except LensError:
                raise  # already names what is missing, at the user's line
            except Exception as exc:  # e.g. NotImplementedError for 'with_effects'
                text = str(exc).strip()
                file, line = self._node_line_named_in(text)
                raise LensError(ErrorKind.EXPORT_ERROR,
                                f"torch-mlir cannot import the program: {type(exc).__name__}: "
                                f"{text.splitlines()[0] if text else ''}",
                                file=file, line=line) from exc
            self._raw = importer.module.operation
            self._timed("import", start)
        return self._raw

    def _node_line_named_in(self, message: str) -> tuple[str | None, int | None]:
        """The user line of the first graph node whose op the (importer) message names."""
        for node in self.program.graph.nodes:
            if node.op != "call_function":
                continue
            name = getattr(node.target, "__name__", None) or str(node.target)
            if name and f"'{name}'" in message:
                trace = node.meta.get("stack_trace") or ""
                frames = [(f, int(n)) for f, n in _FILE_LINE.findall(trace) if f in self.users]
                if frames:
                    return frames[-1]
        return None, None

    def torch_module(self) -> Any | None:
        """The module at the torch backend contract, or None if the torch pipeline failed."""
        if self._torch is None and self._torch_errors is None:
            raw = self.raw_module()
            start = time.perf_counter()
            module = raw.clone()
            try:
                run_pipeline(module, TORCH_BACKEND_PIPELINE)
                self._torch = module
            except _PassFailure as failure:
                self._torch_errors = failure.errors
            self._timed("lower", start)
        return self._torch

    def _torch_failure_diags(self, target: str) -> list[LensDiagnostic]:
        return self._torch_failure(target, LowerOptions())[1]

    def _torch_failure(self, target: str, options: LowerOptions,
                       ) -> tuple[tuple[Any, set[str]] | None, list[LensDiagnostic]]:
        start = time.perf_counter()
        try:
            return self._listing.torch_level(target, self.raw_module(), self._torch_errors or [],
                                             listed=options.list_unsupported)
        finally:
            self._timed("lower", start)

    def _pipeline_for(self, target: str, pipeline: str | None) -> str:
        if target == CUSTOM_TARGET:
            pipeline = pipeline or self._last_custom
            if not pipeline:
                raise LensError(ErrorKind.BAD_REQUEST, "the custom target needs a pipeline")
            return pipeline
        spec = TARGETS.get(target)
        if spec is None or spec.backend_pipeline is None:
            raise LensError(ErrorKind.BAD_REQUEST, f"{target!r} is not a backend target")
        return spec.backend_pipeline

    def _lower_from_torch(self, target: str, pipeline: str | None,
                          options: LowerOptions) -> tuple[Any, list[PassIr] | None]:
        """A clone of the torch module lowered to a backend / custom pipeline (cached)."""
        if target == CUSTOM_TARGET:
            pipeline = pipeline or self._last_custom
            self._last_custom = pipeline
        key = pipeline if target == CUSTOM_TARGET and pipeline else target
        if key in self._lowered and not options.print_after_all:
            return self._lowered[key], None
        torch_mod = self.torch_module()
        assert torch_mod is not None
        start = time.perf_counter()
        module = torch_mod.clone()
        try:
            passes = run_pipeline(module, self._pipeline_for(target, pipeline),
                                  print_after_all=options.print_after_all,
                                  keep_weights=options.keep_weights)
        finally:
            self._timed("lower", start)
        self._lowered[key] = module
        return module, passes

    def _llvm_module(self, options: LowerOptions) -> Any:
        if "llvm" in self._lowered:
            return self._lowered["llvm"]
        try:
            from torch_mlir_lens.worker import llvm as llvm_mod
        except ImportError as exc:
            raise LensError(ErrorKind.BAD_REQUEST, "llvm target not available") from exc
        linalg, _ = self._lower_from_torch("linalg", None, LowerOptions())
        start = time.perf_counter()
        module = linalg.clone()
        try:
            llvm_mod.lower_linalg_to_llvm(module)
        finally:
            self._timed("lower", start)
        self._lowered["llvm"] = module
        return module

    def module_for(self, target: str, *, pipeline: str | None = None,
                   options: LowerOptions | None = None) -> Any:
        """The lowered module op for `target`; any failure raises LensError."""
        options = options or LowerOptions()
        if target == "raw":
            return self.raw_module()
        torch_mod = self.torch_module()
        if torch_mod is None:
            diags = self._torch_failure_diags(target)
            raise LensError(ErrorKind.LOWERING_ERROR, _summary(diags, target),
                            file=diags[0].file if diags else None,
                            line=diags[0].line if diags else None)
        if target == "torch":
            return torch_mod
        try:
            if target == "llvm":
                return self._llvm_module(options)
            module, _ = self._lower_from_torch(target, pipeline, options)
        except _PassFailure as failure:
            backend = "linalg" if target == "llvm" else target
            _part, diags = self._backend_failure(backend, failure, options)
            raise LensError(ErrorKind.LOWERING_ERROR, _summary(diags, backend),
                            file=diags[0].file if diags else None,
                            line=diags[0].line if diags else None) from failure
        return module

    # -- public API ---------------------------------------------------------------------------

    def failure_diagnostics(self, target: str) -> list[LensDiagnostic]:
        """The diagnostics of `target`'s failed lowering (one per cause), once module_for or
        lower has met it; [] otherwise."""
        return self._listing.cached(target)

    def lower(self, target: str | None, *, pipeline: str | None = None,
              options: LowerOptions | None = None) -> LowerResult:
        """Lower to `target` (or run the custom `pipeline` on the torch-backend IR).

        Never raises for a module that fails to lower: the result has ok=False, the furthest
        IR reached, and diagnostics (every unsupported op with its line); an FX-importer
        failure is such a result too (kind export-error). Raises LensError only for bad
        requests (unknown target, "bad-pipeline", llvm target not available).
        """
        options = options or LowerOptions()
        if target is None or (pipeline and target == CUSTOM_TARGET):
            if not pipeline:
                raise LensError(ErrorKind.BAD_REQUEST, "no target and no pipeline given")
            target = CUSTOM_TARGET
        elif target not in TARGETS:
            raise LensError(ErrorKind.BAD_REQUEST, f"unknown target {target!r}")
        self._spent = {}
        start = time.perf_counter()
        try:
            fx = target == "fx"
            result = self._lower_fx() if fx else self._lower_mlir(target, pipeline, options)
        except LensError as err:
            if err.kind != ErrorKind.EXPORT_ERROR:  # bad request / bad pipeline: the caller's
                raise
            # The FX importer refused the program (e.g. 'with_effects'): a result, not a crash.
            result = self._result(target, False, None, options, [err.to_diagnostic(target)])
        timings = {"import": 0.0, "lower": 0.0, "print": 0.0, **self._spent}
        if self.export_seconds is not None:
            timings["export"] = self.export_seconds
            self.export_seconds = None
        timings["total"] = time.perf_counter() - start + timings.get("export", 0.0)
        result.timings = timings
        return result

    def _lower_fx(self) -> LowerResult:
        start = time.perf_counter()
        text, mapping, frames = _fx_text_and_map(self.program, self.users)
        self._timed("print", start)
        lines = {m.ir_line for m in mapping}
        assigns = sum(1 for ln in text.splitlines() if re.match(r"^\s*\w+(\s*:\s*\"[^\"]*\")?\s*=",
                                                                ln))
        stats = {"ops": assigns, "mapped_ops": len(lines), "unmapped_ops": assigns - len(lines),
                 "unmapped_op_names": [], "ir_bytes": len(text.encode())}
        return LowerResult(self.module_name, "fx", True, text, mapping, [], stats,
                           frames=frames)

    def _render(self, module_op: Any, options: LowerOptions) -> ir_text.RenderedIr:
        start = time.perf_counter()
        asm = ir_text.print_asm(module_op, keep_weights=options.keep_weights)
        if not options.keep_weights:  # say plainly which weights the text does not hold
            asm = mark_elided(asm)
        rendered = ir_text.render(asm, self.users, strip_locations=not options.debug_info)
        self._timed("print", start)
        return rendered

    def _result(self, target: str, ok: bool, module_op: Any, options: LowerOptions,
                diagnostics: list[LensDiagnostic],
                passes: list[PassIr] | None = None,
                outlined: partial.Partial | None = None,
                symbols: set[str] | None = None) -> LowerResult:
        rendered = self._render(module_op, options) if module_op is not None else None
        if self.module_file is not None:
            for d in diagnostics:
                if d.file is None:
                    d.file, d.line = self.module_file, self.module_line
        if outlined is not None:
            symbols = {c.symbol for c in outlined.culprits if c.symbol} | (symbols or set())
        if rendered is not None and symbols is not None:
            rendered = partial.decorate(rendered, diagnostics, target, symbols, self.module_file)
        return LowerResult(
            module=self.module_name, target=target, ok=ok,
            ir=rendered.text if rendered else "",
            map=rendered.map if rendered else [],
            frames=rendered.frames if rendered else FrameTable(),
            diagnostics=diagnostics, stats=rendered.stats if rendered else {},
            passes=passes if options.print_after_all else None,
            partial=symbols is not None,
        )

    def _lower_mlir(self, target: str, pipeline: str | None,
                    options: LowerOptions) -> LowerResult:
        if target == "raw":
            return self._result(target, True, self.raw_module(), options, [])
        torch_passes: list[PassIr] | None = None
        if options.print_after_all and target == "torch":
            # Run the torch pipeline on a separate clone to capture its passes.
            try:
                torch_passes = run_pipeline(self.raw_module().clone(), TORCH_BACKEND_PIPELINE,
                                            print_after_all=True,
                                            keep_weights=options.keep_weights)
            except _PassFailure as failure:
                torch_passes = failure.passes
        torch_mod = self.torch_module()
        if torch_mod is None:
            shown, diags = self._torch_failure(target, options)
            if shown is not None:
                return self._result(target, False, shown[0], options, diags, torch_passes,
                                    symbols=shown[1])
            return self._result(target, False, self.raw_module(), options, diags, torch_passes)
        if target == "torch":
            return self._result(target, True, torch_mod, options, [], torch_passes or [])
        if target == "llvm":
            try:
                return self._result(target, True, self._llvm_module(options), options, [])
            except _PassFailure as failure:  # linalg failed: report its unsupported ops
                _part, diags = self._backend_failure("linalg", failure, options)
                return self._result(target, False, torch_mod, options, diags)
            except LensError as err:
                if err.kind == ErrorKind.BAD_REQUEST:
                    raise
                return self._result(target, False, self._lowered.get("linalg", torch_mod),
                                    options, [err.to_diagnostic(target)])
        try:
            module, passes = self._lower_from_torch(target, pipeline, options)
        except _PassFailure as failure:
            part, diags = self._backend_failure(target, failure, options)
            if part is not None:
                passes = self._partial_passes(part, options) if options.print_after_all \
                    else None
                return self._result(target, False, part.module, options, diags, passes,
                                    outlined=part)
            return self._result(target, False, torch_mod, options, diags, failure.passes)
        return self._result(target, True, module, options, [], passes)

    def _backend_failure(self, target: str, failure: _PassFailure, options: LowerOptions,
                         ) -> tuple[partial.Partial | None, list[LensDiagnostic]]:
        """The partial lowering of a failed backend and one diagnostic per cause."""
        start = time.perf_counter()
        try:
            return self._listing.backend(target, self.torch_module(), failure.errors,
                                         listed=options.list_unsupported)
        finally:
            self._timed("lower", start)

    def _partial_passes(self, part: partial.Partial, options: LowerOptions) -> list[PassIr]:
        """The pass picker's list for a partial lowering: the Torch IR with the rejected ops
        outlined, then the IR after each pass of the backend pipeline that lowered it."""
        start = time.perf_counter()
        first = PassIr("outline-rejected-ops", ir_text.print_asm(
            part.outlined, keep_weights=options.keep_weights))
        try:
            passes = run_pipeline(part.outlined.clone(), part.pipeline, print_after_all=True,
                                  keep_weights=options.keep_weights) or []
        except _PassFailure as failure:  # a contract check failing on the calls: expected
            passes = failure.passes or []
        finally:
            self._timed("lower", start)
        # Function passes also dump each declared function alone: keep the module's dumps.
        declaration = re.compile(r"^(//[^\n]*\n)?\s*func\.func private @[^\n{]*\s*$")
        return [first, *(p for p in passes if not declaration.match(p.ir))]

    def write_export(self, target: str, output: str, *, bytecode: bool = False,
                     options: LowerOptions | None = None, pipeline: str | None = None) -> int:
        """Write the IR of `target` to `output` atomically (temp file + os.replace).

        Full weights always (the file must re-parse); locations when options.debug_info.
        Returns the number of bytes written. Failures raise LensError.
        """
        options = options or LowerOptions()
        if target == "fx":
            data = _fx_text_and_map(self.program, self.users)[0].encode()
        else:
            module = self.module_for(target, pipeline=pipeline, options=options)
            if bytecode:
                buf = io.BytesIO()
                module.operation.write_bytecode(buf)
                data = buf.getvalue()
            else:
                data = str(module.operation.get_asm(enable_debug_info=options.debug_info)).encode()
        return atomic_write(output, data)

    def write_repro(self, target: str, output_dir: str, *,
                    pipeline: str | None = None) -> dict[str, str]:
        """Write the input IR of `target`'s lowering and the torch-mlir-opt command for it.

        For a backend that is the torch-backend IR and the backend pipeline; if the torch
        pipeline itself fails, the raw IR and the torch pipeline.
        """
        if target in ("fx", "raw"):
            raise LensError(ErrorKind.BAD_REQUEST, f"no pass pipeline produces {target!r}")
        torch_mod = self.torch_module()
        if target == "torch" or torch_mod is None:
            source, pipe, stage = self.raw_module(), TORCH_BACKEND_PIPELINE, "raw"
        else:
            lower_target = "linalg" if target == "llvm" else target
            source, pipe, stage = torch_mod, self._pipeline_for(lower_target, pipeline), "torch"
        os.makedirs(output_dir, exist_ok=True)
        safe = re.sub(r"[^\w.-]+", "_", self.module_name) or "module"
        path = os.path.join(output_dir, f"{safe}.{target}.{stage}.mlir")
        atomic_write(path, str(source.get_asm(enable_debug_info=True)).encode())
        command = f"torch-mlir-opt -pass-pipeline={shlex.quote(pipe)} {shlex.quote(path)}"
        return {"mlir_path": path, "command": command}


def _summary(diags: list[LensDiagnostic], target: str) -> str:
    """One line naming every culprit at its line (the same words as check and verify)."""
    return culprits.summary(diags, target)


def atomic_write(path: str, data: bytes) -> int:
    """Write `data` to `path` via a temp file in the same folder + os.replace; return size."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=folder)
    except OSError as exc:
        raise LensError(ErrorKind.WRITE_ERROR, f"cannot write {path}: {exc}") from exc
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise LensError(ErrorKind.WRITE_ERROR, f"cannot write {path}: {exc}") from exc
        raise
    return len(data)


def lower_module(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, *,
                 module_name: str, user_files: Iterable[str], targets: list[str],
                 pipeline: str | None = None, options: LowerOptions | None = None,
                 dynamic_shapes: Any = None) -> list[LowerResult]:
    """Export once and lower to each target (+ "custom" when `pipeline` is given).

    An export failure does not raise: it comes back as one ok=False LowerResult per target,
    each carrying the export-error diagnostic at the user's line. Bad requests still raise.
    """
    options = options or LowerOptions()
    wanted: list[tuple[str, str | None]] = [(t, None) for t in targets]
    if pipeline:
        wanted.append((CUSTOM_TARGET, pipeline))
    start = time.perf_counter()
    try:
        program = export_program(fn, args, kwargs, user_files=user_files,
                                 strict=options.strict, dynamic_shapes=dynamic_shapes)
    except LensError as err:
        return [LowerResult(module_name, t, False, diagnostics=[err.to_diagnostic(t)],
                            timings={"export": time.perf_counter() - start})
                for t, _ in wanted]
    lowerer = ProgramLowerer(program, module_name=module_name, user_files=user_files)
    lowerer.export_seconds = time.perf_counter() - start
    results = []
    for target, pipe in wanted:
        try:
            results.append(lowerer.lower(target, pipeline=pipe, options=options))
        except LensError as err:
            if err.kind != ErrorKind.EXPORT_ERROR:
                raise
            results.append(LowerResult(module_name, target, False,
                                       diagnostics=[err.to_diagnostic(target)]))
    return results


__all__ = [
    "MLIR_TARGETS",
    "LowerOptions",
    "ProgramLowerer",
    "as_module",
    "atomic_write",
    "export_program",
    "lower_module",
    "parsing_context",
    "run_pipeline",
]

"""ProgramLowerer: one exported program lowered to any target, each stage built once.

    ProgramLowerer(program, module_name=..., user_files=...)
        .lower("linalg")                                      → LowerResult (IR, map, diagnostics)
        .module_for("tosa")                                   → the lowered module op
    lower_module(fn, args, kwargs, targets=[...])            → [LowerResult], one export

The FX import happens once per lowerer and the torch-backend module is kept: every backend
works on a clone of it. This module decides what to build and caches it; the stages (stages/:
torch_export.py exports and imports, pipeline.py runs the passes, artifacts.py prints and
writes) do it; writing.py writes a lowerer's exports and reproducers.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable
from typing import Any

from torch_mlir_lens.protocol.results import (
    ErrorKind,
    LensDiagnostic,
    LensError,
    LowerResult,
    PassIr,
)
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.targets import CUSTOM_TARGET, TARGETS, TORCH_BACKEND_PIPELINE
from torch_mlir_lens.worker.blocks import lowering as blocks
from torch_mlir_lens.worker.culprits import failures, partial
from torch_mlir_lens.worker.ir import ir_text
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.shims import legacy_view_shim
from torch_mlir_lens.worker.stages import artifacts
from torch_mlir_lens.worker.stages.pipeline import (
    PassFailure,
    backend_pipeline,
    partial_passes,
    run_pipeline,
)
from torch_mlir_lens.worker.stages.torch_export import export_program, import_program


def _alive(ref: weakref.ReferenceType[ProgramLowerer]) -> ProgramLowerer:
    lowerer = ref()
    if lowerer is None:  # only the lowerer holds its listing, so it outlives every call
        raise RuntimeError("a listing outlived its lowerer")
    return lowerer


class ProgramLowerer:
    """Lowers one exported program to any target; the FX import and torch pipeline run once."""

    def __init__(self, program: Any, *, module_name: str, user_files: Iterable[str],
                 module_file: str | None = None, module_line: int | None = None) -> None:
        """`module_file`/`module_line` (the class line), when given, locate the failures
        that have no user line of their own; otherwise those stay on the module (None)."""
        self.program = program
        # A program whose repeated blocks are functions (worker/blocks/): imported stitched,
        # its block calls kept through the pipelines.
        self.stitched = program if getattr(program, "is_stitched", False) else None
        self.module_name = module_name
        self.module_file = module_file
        self.module_line = module_line
        self.users = UserFiles(user_files)
        self.export_seconds: float | None = None  # set by lower_module (reported once)
        self._raw: Any = None
        self._torch: Any = None
        self._torch_errors: list[Diag] | None = None
        self._linalg_source: Any = None  # _backend_source("linalg")
        self._lowered: dict[str, Any] = {}  # target (or pipeline) → lowered module op
        self._last_custom: str | None = None  # so "custom" can be exported after lower()
        self._spent: dict[str, float] = {}
        # target → (partial lowering or None, its diagnostics): a failed backend, listed once.
        # It reaches the imported module through a weak reference: a bound method would make a
        # cycle, and a lowerer in a cycle keeps its MLIR modules (megabytes the collector does
        # not see) until a rare full collection, so a worker grew by ~2 MB per lowering.
        this = weakref.ref(self)
        self._listing = failures.Failures(program, self.users, module_name,
                                          raw_module=lambda: _alive(this).raw_module())

    # -- building blocks ----------------------------------------------------------------------

    def _timed(self, key: str, start: float) -> None:
        self._spent[key] = self._spent.get(key, 0.0) + time.perf_counter() - start

    def raw_module(self) -> Any:
        """The FX-imported module (imported once). Import failures → LensError export-error."""
        if self._raw is None:
            start = time.perf_counter()
            self._raw = self.stitched.raw_module() if self.stitched else import_program(
                self.program, self.users)
            self._timed("import", start)
        return self._raw

    def torch_module(self) -> Any | None:
        """The module at the torch backend contract, or None if the torch pipeline failed."""
        if self._torch is None and self._torch_errors is None:
            raw = self.raw_module()
            start = time.perf_counter()
            module = raw.clone()
            try:
                run_pipeline(module, TORCH_BACKEND_PIPELINE)
                if self.stitched:
                    blocks.release_calls(module)
                self._torch = module
            except PassFailure as failure:
                self._torch_errors = failure.errors
            self._timed("lower", start)
        return self._torch

    def contract_module(self) -> Any | None:
        """The module at the torch backend contract; when torch-mlir itself rejects some ops,
        the one reached with those outlined (None if even that fails): the backends'
        culprits are ops of it, the rejected ops only declarations."""
        torch_module = self.torch_module()
        if torch_module is not None:
            return torch_module
        shown, _diags = self._torch_failure("torch", LowerOptions())
        return shown[0] if shown is not None else None

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

    def pipeline_for(self, target: str, pipeline: str | None) -> str:
        """The pass pipeline that lowers the torch-backend module to `target`."""
        custom = (pipeline or self._last_custom) if target == CUSTOM_TARGET else pipeline
        return backend_pipeline(target, custom)

    def _lower_from_torch(self, target: str, pipeline: str | None,
                          options: LowerOptions) -> tuple[Any, list[PassIr] | None]:
        """A clone of the torch module lowered to a backend / custom pipeline (cached)."""
        if target == CUSTOM_TARGET:
            pipeline = pipeline or self._last_custom
            self._last_custom = pipeline
        key = pipeline if target == CUSTOM_TARGET and pipeline else target
        if key in self._lowered and not options.print_after_all:
            return self._lowered[key], None
        source = self._backend_source(target)
        assert source is not None
        start = time.perf_counter()
        module = source.clone()
        try:
            run = blocks.stitched_runner(target) if self.stitched else run_pipeline
            passes = run(module, self.pipeline_for(target, pipeline),
                         print_after_all=options.print_after_all,
                         keep_weights=options.keep_weights)
        finally:
            self._timed("lower", start)
        self._lowered[key] = module
        return module, passes

    def _backend_source(self, target: str) -> Any | None:
        """The torch-backend module `target` lowers from: for Linalg, a copy whose views
        torch-mlir would miscompile are rerouted (legacy_view_shim, llvm/torch-mlir#4743)."""
        torch_mod = self.torch_module()
        if target != "linalg" or torch_mod is None:
            return torch_mod
        if self._linalg_source is None:
            self._linalg_source = torch_mod
            if legacy_view_shim.narrowing_views(torch_mod):
                self._linalg_source = torch_mod.clone()
                legacy_view_shim.reroute_narrowing_views(self._linalg_source)
        return self._linalg_source

    def _llvm_module(self, options: LowerOptions) -> Any:
        if "llvm" in self._lowered:
            return self._lowered["llvm"]
        try:
            from torch_mlir_lens.worker.stages import llvm as llvm_mod
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
            raise LensError(ErrorKind.LOWERING_ERROR, culprits.summary(diags, target),
                            file=diags[0].file if diags else None,
                            line=diags[0].line if diags else None)
        if target == "torch":
            return torch_mod
        try:
            if target == "llvm":
                return self._llvm_module(options)
            module, _ = self._lower_from_torch(target, pipeline, options)
        except PassFailure as failure:
            backend = "linalg" if target == "llvm" else target
            _part, diags = self._backend_failure(backend, failure, options)
            raise LensError(ErrorKind.LOWERING_ERROR, culprits.summary(diags, backend),
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
        result = (blocks.fx_result(self.module_name, self.program, self.users) if self.stitched
                  else artifacts.fx_result(self.module_name, self.program, self.users))
        self._timed("print", start)
        return result

    def _render(self, module_op: Any, options: LowerOptions) -> ir_text.RenderedIr:
        start = time.perf_counter()
        rendered = artifacts.render(module_op, self.users, keep_weights=options.keep_weights,
                                    debug_info=options.debug_info)
        self._timed("print", start)
        return rendered

    def _result(self, target: str, ok: bool, module_op: Any, options: LowerOptions,
                diagnostics: list[LensDiagnostic],
                passes: list[PassIr] | None = None,
                outlined: partial.Partial | None = None,
                symbols: set[str] | None = None) -> LowerResult:
        rendered = self._render(module_op, options) if module_op is not None else None
        if outlined is not None:
            symbols = {c.symbol for c in outlined.culprits if c.symbol} | (symbols or set())
        return artifacts.lower_result(
            self.module_name, target, ok, rendered, diagnostics,
            passes=passes if options.print_after_all else None, symbols=symbols,
            module_file=self.module_file, module_line=self.module_line)

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
            except PassFailure as failure:
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
            except PassFailure as failure:  # linalg failed: report its unsupported ops
                _part, diags = self._backend_failure("linalg", failure, options)
                return self._result(target, False, torch_mod, options, diags)
            except LensError as err:
                if err.kind == ErrorKind.BAD_REQUEST:
                    raise
                return self._result(target, False, self._lowered.get("linalg", torch_mod),
                                    options, [err.to_diagnostic(target)])
        try:
            module, passes = self._lower_from_torch(target, pipeline, options)
        except PassFailure as failure:
            part, diags = self._backend_failure(target, failure, options)
            if part is not None:
                passes = self._partial_passes(part, options) if options.print_after_all \
                    else None
                return self._result(target, False, part.module, options, diags, passes,
                                    outlined=part)
            return self._result(target, False, torch_mod, options, diags, failure.passes)
        warnings = [] if target != CUSTOM_TARGET else legacy_view_shim.unshimmed_warnings(
            torch_mod, self.pipeline_for(target, pipeline), self.users, target)
        return self._result(target, True, module, options, warnings, passes)

    def _backend_failure(self, target: str, failure: PassFailure, options: LowerOptions,
                         ) -> tuple[partial.Partial | None, list[LensDiagnostic]]:
        """The partial lowering of a failed backend and one diagnostic per cause."""
        start = time.perf_counter()
        try:
            return self._listing.backend(target, self._backend_source(target), failure.errors,
                                         listed=options.list_unsupported)
        finally:
            self._timed("lower", start)

    def _partial_passes(self, part: partial.Partial, options: LowerOptions) -> list[PassIr]:
        start = time.perf_counter()
        try:
            return partial_passes(part, keep_weights=options.keep_weights)
        finally:
            self._timed("lower", start)


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


"""OnnxLowerer: one ONNX model lowered to any target, each stage built once, every op at its node.

    OnnxLowerer(model, path=..., module_name=...)
        .lower("tosa")        → LowerResult (IR, node map, one diagnostic per rejected node)
        .module_for("linalg") → the lowered module op (LensError when it does not lower)

Stages, as `torch-mlir-import-onnx` and torch-mlir's pipelines make them: `raw` is the model
imported (importing.py: each node a `torch.operator "onnx.*"`), `torch` is after
`torch-onnx-to-torch-backend-pipeline`, each backend after its own pipeline from there. The
conversion of nodes (that pipeline's first pass) also runs alone, once: a node it leaves is a
culprit on every target (listing.py). The same interface as the PyTorch `ProgramLowerer`
where Verify reads it (`module_for`, `users`), so `verify/` runs a model's IR unchanged.
"""

from __future__ import annotations

import time
from typing import Any

import onnx

from torch_mlir_lens.protocol.onnx_graphs import OnnxGraph
from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LensError, LowerResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.targets import (
    CUSTOM_TARGET,
    ONNX_TORCH_PIPELINE,
    TARGETS,
)
from torch_mlir_lens.worker.culprits import partial
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.onnx import listing
from torch_mlir_lens.worker.onnx.conversion import Conversion, convert
from torch_mlir_lens.worker.onnx.importing import Imported, import_model
from torch_mlir_lens.worker.onnx.node_diags import NodeWords, Rejected
from torch_mlir_lens.worker.onnx.nodes import graph_of
from torch_mlir_lens.worker.stages import artifacts
from torch_mlir_lens.worker.stages.pipeline import (
    PassFailure,
    backend_pipeline,
    new_context,
    run_pipeline,
)


class OnnxLowerer:
    """Lowers one ONNX model to any target; the import and the Torch pipeline run once."""

    def __init__(self, model: onnx.ModelProto, *, path: str, module_name: str,
                 fixes: list[str] | None = None) -> None:
        """`model` as read (and changed by `fixes`, by name, already); `path` its file, where
        every op is located (node N at line N)."""
        self.model = model
        self.path = path
        self.module_name = module_name
        self.fixes = list(fixes or [])
        self.users = UserFiles([path])
        # Where a failure of the whole model is placed (an IREE target's, worker/iree/): the
        # file, on no node.
        self.module_file: str | None = path
        self.module_line: int | None = None
        self.ctx = new_context()
        self._imported: Imported | None = None
        self._conversion: Conversion | None = None
        self._torch: Any = None
        self._torch_errors: list[Diag] | None = None
        self._lowered: dict[str, Any] = {}
        self._failed: dict[str, listing.Shown] = {}
        self._spent: dict[str, float] = {}

    # -- stages -------------------------------------------------------------------------------

    def _timed(self, key: str, start: float) -> None:
        self._spent[key] = self._spent.get(key, 0.0) + time.perf_counter() - start

    def imported(self) -> Imported:
        """The model imported (once); the importer's refusal raises LensError at its node."""
        if self._imported is None:
            start = time.perf_counter()
            try:
                self._imported = import_model(self.model, self.path, self.ctx)
            finally:
                self._timed("import", start)
        return self._imported

    def graph(self) -> OnnxGraph:
        """The graph's summary: values, opsets, nodes and the fixes it went through."""
        summary = graph_of(self.model, self.imported().keys.nodes)
        summary.fixes = list(self.fixes)
        return summary

    def words(self) -> NodeWords:
        return NodeWords(self.path, self.imported().keys.nodes)

    def raw_module(self) -> Any:
        return self.imported().module

    def conversion(self) -> Conversion:
        """The nodes converted to Torch ops (once), with those torch-mlir rejects."""
        if self._conversion is None:
            start = time.perf_counter()
            try:
                self._conversion = convert(self.raw_module())
            finally:
                self._timed("lower", start)
        return self._conversion

    def rejected_nodes(self) -> list[Rejected]:
        """The nodes torch-mlir's ONNX conversion rejects (their knock-ons left out)."""
        return list(self.conversion().rejected)

    def torch_module(self) -> Any | None:
        """The Torch backend IR; None when some node is not converted or a pass fails."""
        if self._torch is None and self._torch_errors is None:
            conversion = self.conversion()
            if conversion.module is None or conversion.rejected or conversion.knock_on:
                self._torch_errors = conversion.errors
                return None
            start = time.perf_counter()
            module = conversion.module.clone()
            try:
                run_pipeline(module, ONNX_TORCH_PIPELINE)
                self._torch = module
            except PassFailure as failure:
                self._torch_errors = failure.errors
            finally:
                self._timed("lower", start)
        return self._torch

    def _torch_failure(self, target: str) -> listing.Shown:
        key = f"torch-level:{target}"
        if key not in self._failed:
            start = time.perf_counter()
            words = self.words()
            conversion = self.conversion()
            if conversion.rejected or conversion.knock_on:
                shown = listing.torch_failure(conversion, target, words)
            else:
                shown = listing.Shown(conversion.module, None,
                                      words.errors(self._torch_errors or [], target))
            if shown.module is None:
                shown.module = self.raw_module()
            self._failed[key] = shown
            self._timed("lower", start)
        return self._failed[key]

    def _lower_from_torch(self, target: str, pipeline: str | None,
                          options: LowerOptions) -> tuple[Any, Any]:
        key = pipeline if target == CUSTOM_TARGET and pipeline else target
        if key in self._lowered and not options.print_after_all:
            return self._lowered[key], None
        torch_module = self.torch_module()
        assert torch_module is not None
        start = time.perf_counter()
        module = torch_module.clone()
        try:
            passes = run_pipeline(module, backend_pipeline(target, pipeline),
                                  print_after_all=options.print_after_all,
                                  keep_weights=options.keep_weights)
        finally:
            self._timed("lower", start)
        self._lowered[key] = module
        return module, passes

    def _backend_failure(self, target: str, errors: list[Diag]) -> listing.Shown:
        if target not in self._failed:
            start = time.perf_counter()
            self._failed[target] = listing.backend_failure(self.torch_module(), target, errors,
                                                           self.words())
            self._timed("lower", start)
        return self._failed[target]

    def _llvm_module(self) -> Any:
        if "llvm" not in self._lowered:
            from torch_mlir_lens.worker.stages import llvm as llvm_mod

            linalg, _ = self._lower_from_torch("linalg", None, LowerOptions())
            module = linalg.clone()
            llvm_mod.lower_linalg_to_llvm(module)
            self._lowered["llvm"] = module
        return self._lowered["llvm"]

    # -- what the jobs call -------------------------------------------------------------------

    def module_for(self, target: str, *, pipeline: str | None = None) -> Any:
        """The lowered module op for `target`; a model that does not get there raises
        LensError (lowering-error) naming its culprits' nodes."""
        _check_target(target)
        if target == "raw":
            return self.raw_module()
        torch_module = self.torch_module()
        if torch_module is None:
            diags = self._torch_failure(target).diagnostics
            raise self._failure(diags, target)
        if target == "torch":
            return torch_module
        backend = "linalg" if target == "llvm" else target
        try:
            if target == "llvm":
                return self._llvm_module()
            return self._lower_from_torch(target, pipeline, LowerOptions())[0]
        except PassFailure as failure:
            diags = self._backend_failure(backend, failure.errors).diagnostics
            raise self._failure(diags, backend) from failure

    def _failure(self, diags: list[LensDiagnostic], target: str) -> LensError:
        first = diags[0] if diags else None
        return LensError(ErrorKind.LOWERING_ERROR, culprits.summary(diags, target, self.path),
                         file=self.path, line=first.line if first else None)

    def lower(self, target: str | None, *, pipeline: str | None = None,
              options: LowerOptions | None = None) -> LowerResult:
        """Lower to `target` (or run the custom `pipeline` on the Torch backend IR). A model
        that does not lower is a result (ok False, the furthest or partial IR, one
        diagnostic per rejected node); an importer refusal too."""
        options = options or LowerOptions()
        if target is None or (pipeline and target == CUSTOM_TARGET):
            if not pipeline:
                raise LensError(ErrorKind.BAD_REQUEST, "no target and no pipeline given")
            target = CUSTOM_TARGET
        _check_target(target)
        self._spent = {}
        start = time.perf_counter()
        try:
            result = self._lower(target, pipeline, options)
        except LensError as err:
            if err.kind not in (ErrorKind.EXPORT_ERROR, ErrorKind.LOAD_ERROR):
                raise
            result = LowerResult(self.module_name, target, False,
                                 diagnostics=[err.to_diagnostic(target)])
        result.timings = {"import": 0.0, "lower": 0.0, "print": 0.0, **self._spent,
                          "total": time.perf_counter() - start}
        return result

    def _lower(self, target: str, pipeline: str | None, options: LowerOptions) -> LowerResult:
        if target == "raw":
            return self._result(target, True, self.raw_module(), [], options)
        torch_module = self.torch_module()
        if torch_module is None:
            shown = self._torch_failure(target)
            return self._result(target, False, shown.module, shown.diagnostics, options,
                                shown.symbols)
        if target == "torch":
            return self._result(target, True, torch_module, [], options)
        if target == "llvm":
            try:
                return self._result(target, True, self._llvm_module(), [], options)
            except PassFailure as failure:
                shown = self._backend_failure("linalg", failure.errors)
                return self._result(target, False, torch_module, shown.diagnostics, options)
        try:
            module, passes = self._lower_from_torch(target, pipeline, options)
        except PassFailure as failure:
            shown = self._backend_failure(target, failure.errors)
            return self._result(target, False, shown.module or torch_module,
                                shown.diagnostics, options, shown.symbols, failure.passes)
        return self._result(target, True, module, [], options, passes=passes)

    def _result(self, target: str, ok: bool, module_op: Any, diags: list[LensDiagnostic],
                options: LowerOptions, symbols: set[str] | None = None,
                passes: Any = None) -> LowerResult:
        start = time.perf_counter()
        rendered = artifacts.render(module_op, self.users, keep_weights=options.keep_weights,
                                    debug_info=options.debug_info)
        if symbols is not None:
            rendered = partial.decorate(rendered, diags, target, symbols, self.path)
            head, _, rest = rendered.text.partition("\n")  # an ONNX model's rows are nodes
            head = head.replace(" lines hold ", " nodes hold ").replace(" line holds ",
                                                                          " node holds ")
            rendered.text = f"{head}\n{rest}"
        self._timed("print", start)
        return LowerResult(
            module=self.module_name, target=target, ok=ok, ir=rendered.text,
            map=rendered.map, diagnostics=diags, stats=rendered.stats,
            passes=passes if options.print_after_all else None,
            partial=symbols is not None and not ok, onnx=self.graph())


def _check_target(target: str) -> None:
    if target == "fx":
        raise LensError(ErrorKind.BAD_REQUEST, "an ONNX model has no FX graph: its first "
                        "target is `raw` (the model as torch-mlir's ONNX importer makes it)")
    if target != CUSTOM_TARGET and target not in TARGETS:
        raise LensError(ErrorKind.BAD_REQUEST, f"unknown target {target!r}")

"""What a failed lowering shows: the partial IR and one diagnostic per cause, once per target.

    Failures(program, users)
        .backend(target, torch_module, errors)     → (Partial | None, diagnostics)
        .torch_level(target, raw_module, errors)   → ((module, call symbols) | None, diagnostics)
        .cached(target)                            → the diagnostics already computed

A backend that rejects some ops gets the partial lowering of partial.py and its culprits
grouped by culprit_diags.py; when that cannot be built, the rejected ops are still listed
(illegal_ops.py) and grouped the same way. When torch-mlir itself rejects ops before any
backend, those are outlined first and the backend's own rejects are added.

Listing runs many pipelines on IR torch-mlir never saw (ops alone, calls in place of ops), so
each listing runs in a forked child (crash_guard.py) and its modules come back as bytecode; if
the child dies, once more with each pass guarded, which pins the crash on an op (outlined as a
culprit). A crash, there or in the pipeline that failed, is one more diagnostic; the worker and
the other targets carry on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from torch_mlir import ir

from torch_mlir_lens import targets
from torch_mlir_lens.results import ErrorKind, LensDiagnostic
from torch_mlir_lens.targets import TORCH_BACKEND_PIPELINE, target_title
from torch_mlir_lens.worker import crash_guard, crash_locate, culprit_diags, illegal_ops, partial
from torch_mlir_lens.worker.library_diags import add_library_frames
from torch_mlir_lens.worker.locations import LocationResolver, UserFiles
from torch_mlir_lens.worker.mlir_diagnostics import Diag

T = TypeVar("T")
Shown = tuple[Any, set[str]]  # a module with outlined ops, and the symbols of its calls


@dataclass
class _SentPartial:
    """A Partial on its way back from a forked child: modules as bytecode."""

    module: bytes
    outlined: bytes
    culprits: list[partial.Culprit]
    complete: bool
    pipeline: str

    @staticmethod
    def of(part: partial.Partial | None) -> _SentPartial | None:
        if part is None:
            return None
        return _SentPartial(crash_guard.module_bytes(part.module),
                            crash_guard.module_bytes(part.outlined), part.culprits,
                            part.complete, part.pipeline)

    def restore(self, ctx: ir.Context) -> partial.Partial:
        crash_guard.load_dialects(self.pipeline, ctx)
        with ctx:
            module = ir.Module.parse(self.module, context=ctx).operation
            outlined = ir.Module.parse(self.outlined, context=ctx).operation
        return partial.Partial(module, self.culprits, self.complete, outlined, self.pipeline)


def _forked_twice(fn: Callable[[], T], step: str) -> T:
    """`fn()` in a forked child; if that child dies, in another with each pass guarded
    (crash_guard.guarded): slower, but a crash there is pinned on its op."""
    try:
        return crash_guard.run_forked(fn, step=step)
    except crash_guard.Crash:
        with crash_guard.guarded():
            return crash_guard.run_forked(fn, step=step)


def _crash_diagnostics(errors: list[Diag], target: str,
                       resolver: LocationResolver) -> list[LensDiagnostic]:
    return illegal_ops.error_diagnostics(errors, target, resolver)


def _rejected(part: partial.Partial) -> list[culprit_diags.Rejected]:
    return [culprit_diags.Rejected(c.id, c.name, c.location, c.message, c.tensor, c.feeders)
            for c in part.culprits]


class Failures:
    """The failures of one exported program, listed once per target."""

    def __init__(self, program: Any, users: UserFiles) -> None:
        self.program = program
        self.users = users
        self._backend: dict[str, tuple[partial.Partial | None, list[LensDiagnostic]]] = {}
        self._torch: dict[str, tuple[Shown | None, list[LensDiagnostic]]] = {}

    def cached(self, target: str) -> list[LensDiagnostic]:
        """The diagnostics of `target`'s failure, if it was met already ([] otherwise)."""
        for cache in (self._backend, self._torch):
            if target in cache:
                return list(cache[target][1])
        return []

    def _group(self, rejected: list[culprit_diags.Rejected], target: str,
               resolver: LocationResolver, module: Any) -> list[LensDiagnostic]:
        calls = culprit_diags.fx_calls(self.program, self.users)
        ir_ops = culprit_diags.ir_ops_by_line(module, resolver)
        diags = culprit_diags.diagnostics(rejected, target, resolver, calls, ir_ops)
        add_library_frames(diags, [(r.name, r.location) for r in rejected], resolver)
        return diags

    def backend(self, target: str, torch_module: Any, errors: list[Diag], *,
                listed: bool = True) -> tuple[partial.Partial | None, list[LensDiagnostic]]:
        """The partial lowering of a failed backend (None if it cannot be built) and one
        diagnostic per cause. `listed` False: only the pipeline's own errors (not cached)."""
        listed = listed and target in targets.BACKEND_PIPELINES
        if listed and target in self._backend:
            return self._backend[target]
        resolver = LocationResolver(self.users)
        crashes = [d for d in errors if crash_guard.is_crash_message(d.message)]
        crashing = [op for op in map(crash_locate.crashed_op, crashes) if op is not None]
        if listed and len(crashing) == len(crashes):  # a crash no op explains: no listing
            try:
                self._backend[target] = self._list_forked(target, torch_module, errors,
                                                          resolver, crashing)
                return self._backend[target]
            except Exception:  # the listing is best effort; the first error is certain
                pass
        diags = illegal_ops.error_diagnostics(errors, target, resolver)
        for d in diags:
            if d.op and d.op.startswith("torch.") and not d.op.startswith("torch.constant"):
                d.kind = ErrorKind.UNSUPPORTED_OP
        return None, diags

    def _list_forked(self, target: str, torch_module: Any, errors: list[Diag],
                     resolver: LocationResolver, crashing: list[illegal_ops.FoundOp],
                     ) -> tuple[partial.Partial | None, list[LensDiagnostic]]:
        """`_list` in a forked child (here when crash_guard says it is not worth it); a crash
        there (or one partial lowering cannot pin on an op) is added to the pipeline's own
        errors."""
        if not crash_guard.worth_forking(torch_module.context):
            return self._list(target, torch_module, errors, resolver, crashing)

        def listing() -> tuple[_SentPartial | None, list[LensDiagnostic]]:
            try:
                part, diags = self._list(target, torch_module, errors, resolver, crashing)
            except partial.StepCrash as crash:
                return None, _crash_diagnostics([*errors, crash.diag], target, resolver)
            return _SentPartial.of(part), diags

        step = f"the listing of what {target_title(target)} rejects"
        try:
            sent, diags = _forked_twice(listing, step)
        except crash_guard.Crash as crash:
            return None, _crash_diagnostics([*errors, Diag("error", crash.message(),
                                                            "loc(unknown)")], target, resolver)
        return (sent.restore(torch_module.context) if sent else None), diags

    def _list(self, target: str, torch_module: Any, errors: list[Diag],
              resolver: LocationResolver, crashing: list[illegal_ops.FoundOp] | None = None,
              ) -> tuple[partial.Partial | None, list[LensDiagnostic]]:
        part = partial.lower_partially(torch_module, target, crashing=crashing)
        if part is not None:
            diags = self._group(_rejected(part), target, resolver, torch_module)
            if not part.complete:
                diags.append(illegal_ops.incomplete_warning(target))
            return part, diags

        def grouped(found: list[illegal_ops.FoundOp]) -> list[LensDiagnostic]:
            rejected = [culprit_diags.Rejected(i, f.name, f.location, f.message,
                                               culprit_diags.guess_tensor(f.name))
                        for i, f in enumerate(found)]
            return self._group(rejected, target, resolver, torch_module)

        return None, illegal_ops.list_unsupported(torch_module, target, errors, resolver,
                                                  to_diagnostics=grouped)

    def torch_level(self, target: str, raw_module: Any, errors: list[Diag], *,
                    listed: bool = True) -> tuple[Shown | None, list[LensDiagnostic]]:
        """When torch-mlir itself rejects ops: the IR reached with them outlined (the Torch
        module, or the target's partial lowering) with its call symbols, and every culprit,
        torch-level and the backend's."""
        if target in self._torch:
            return self._torch[target]
        resolver = LocationResolver(self.users)
        if crash_guard.worth_forking(raw_module.context):
            self._torch[target] = self._torch_listing_forked(target, raw_module, errors,
                                                             resolver, listed)
        else:
            self._torch[target] = self._torch_listing(target, raw_module, errors, resolver,
                                                      listed)
        return self._torch[target]

    def _torch_listing_forked(self, target: str, raw_module: Any, errors: list[Diag],
                              resolver: LocationResolver, listed: bool,
                              ) -> tuple[Shown | None, list[LensDiagnostic]]:
        """`_torch_listing` in a forked child; a crash there is one more diagnostic."""
        def listing() -> tuple[tuple[bytes, set[str]] | None, str, list[LensDiagnostic]]:
            shown, diags = self._torch_listing(target, raw_module, errors, resolver, listed)
            if shown is None:
                return None, "", diags
            return (crash_guard.module_bytes(shown[0]), shown[1]), \
                targets.BACKEND_PIPELINES.get(target, TORCH_BACKEND_PIPELINE), diags

        ctx = raw_module.context
        try:
            sent, pipeline, diags = _forked_twice(listing, "the listing of what torch-mlir rejects")
        except crash_guard.Crash as crash:
            sent, pipeline = None, ""
            diags = illegal_ops.list_torch_level(raw_module, errors, resolver, target)
            diags += _crash_diagnostics([Diag("error", crash.message(), "loc(unknown)")],
                                        target, resolver)
        shown: Shown | None = None
        if sent is not None:
            crash_guard.load_dialects(pipeline, ctx)
            crash_guard.load_dialects(TORCH_BACKEND_PIPELINE, ctx)
            with ctx:
                shown = ir.Module.parse(sent[0], context=ctx).operation, sent[1]
        return shown, diags

    def _torch_listing(self, target: str, raw_module: Any, errors: list[Diag],
                       resolver: LocationResolver, listed: bool,
                       ) -> tuple[Shown | None, list[LensDiagnostic]]:
        diags = illegal_ops.list_torch_level(raw_module, errors, resolver, target)
        shown: Shown | None = None
        try:
            outlined = partial.outline_torch_operators(raw_module, TORCH_BACKEND_PIPELINE)
            if outlined is not None and listed:
                module, symbols = outlined
                if target == "torch":
                    shown = module, symbols
                elif target in targets.BACKEND_PIPELINES:
                    part = partial.lower_partially(module, target, outlined_already=True)
                    if part is not None:
                        more = self._group(_rejected(part), target, resolver, module)
                        diags = sorted(diags + more, key=lambda d: (d.line is None, d.line or 0))
                        shown = part.module, symbols | {c.symbol for c in part.culprits
                                                        if c.symbol}
        except partial.StepCrash as crash:
            diags += _crash_diagnostics([crash.diag], target, resolver)
        except Exception:  # best effort: the torch-level listing stands without it
            shown = None
        return shown, diags


__all__ = ["Failures"]

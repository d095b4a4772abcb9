"""What a failed lowering shows: the partial IR and one diagnostic per cause, once per target.

    Failures(program, users, module_name, raw_module=...)
        .backend(target, torch_module, errors)     → (Partial | None, diagnostics)
        .torch_level(target, raw_module, errors)   → ((module, call symbols) | None, diagnostics)
        .cached(target)                            → the diagnostics already computed

A backend that rejects some ops gets the partial lowering of partial.py and its culprits
grouped by culprit_diags.py; when that cannot be built, the rejected ops are still listed
(illegal_ops.py) and grouped the same way. When torch-mlir itself rejects ops before any
backend, those are outlined first and the backend's own rejects are added. A scalar result a
backend cannot return is a culprit of its own (scalar_boundary.py), and an error no op puts
on a line goes to the `def forward` line (forward_site.py).

Listing runs many pipelines on IR torch-mlir never saw (ops alone, calls in place of ops), so
each listing runs in a forked child (crash_guard.py) and its modules come back as bytecode; if
the child dies, once more with each pass guarded, which pins the crash on an op (outlined as a
culprit). A crash, there or in the pipeline that failed, is one more diagnostic; the worker and
the other targets carry on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from torch_mlir import ir

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic
from torch_mlir_lens.rules import targets
from torch_mlir_lens.rules.targets import TORCH_BACKEND_PIPELINE, target_title
from torch_mlir_lens.worker.culprits import (
    crash_locate,
    culprit_diags,
    fx_origins,
    illegal_ops,
    partial,
    scalar_boundary,
)
from torch_mlir_lens.worker.culprits.forward_site import ForwardSite, forward_site
from torch_mlir_lens.worker.ir import crash_guard
from torch_mlir_lens.worker.ir.library_diags import add_library_frames
from torch_mlir_lens.worker.ir.locations import LocationResolver, UserFiles
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag

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


def _rejected(part: partial.Partial) -> list[culprit_diags.Rejected]:
    return [culprit_diags.Rejected(c.id, c.name, c.location, c.message, c.tensor, c.feeders,
                                   c.lowers_alone)
            for c in part.culprits]


class Failures:
    """The failures of one exported program, listed once per target."""

    def __init__(self, program: Any, users: UserFiles, module_name: str = "",
                 raw_module: Callable[[], Any] | None = None) -> None:
        """`module_name`: the class lowered, whose `forward` holds the failures no op of the
        IR carries a line for; `raw_module`: the imported IR, to check which call an op
        comes from."""
        self.program = program
        self.raw_module = raw_module
        self.users = users
        self.module_name = module_name
        self._backend: dict[str, tuple[partial.Partial | None, list[LensDiagnostic]]] = {}
        self._torch: dict[str, tuple[Shown | None, list[LensDiagnostic]]] = {}
        self._calls: fx_origins.FxCalls | None = None  # built on the first failure

    def cached(self, target: str) -> list[LensDiagnostic]:
        """The diagnostics of `target`'s failure, if it was met already ([] otherwise)."""
        for cache in (self._backend, self._torch):
            if target in cache:
                return list(cache[target][1])
        return []

    def _fx_calls(self) -> fx_origins.FxCalls:
        if self._calls is None:
            self._calls = fx_origins.FxCalls(self.program)
            for block in getattr(self.program, "block_programs", ()):  # a stitched program's
                self._calls.merge(fx_origins.FxCalls(block))
        return self._calls

    def _group(self, rejected: list[culprit_diags.Rejected], target: str,
               resolver: LocationResolver, module: Any) -> list[LensDiagnostic]:
        ir_ops = fx_origins.ir_ops_by_chain(module, resolver)
        rewrites = fx_origins.TorchRewrites(self.raw_module(), resolver) \
            if self.raw_module is not None else None
        diags = culprit_diags.diagnostics(rejected, target, resolver, self._fx_calls(), ir_ops,
                                          rewrites)
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
        return None, self._located(diags) if crashes else diags

    def _forward(self) -> ForwardSite | None:
        return forward_site(self.users.given, self.module_name) if self.module_name else None

    def _located(self, diags: list[LensDiagnostic]) -> list[LensDiagnostic]:
        """Every error with a line: one that has none goes to `forward`'s `def` line."""
        site = self._forward() if any(d.line is None for d in diags) else None
        if site is not None:
            for d in diags:
                if d.line is None:
                    d.file, d.line = site.file, site.def_line
        return diags

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
                return None, self._crash_diagnostics([*errors, crash.diag], target, resolver)
            return _SentPartial.of(part), diags

        step = f"the listing of what {target_title(target)} rejects"
        try:
            sent, diags = _forked_twice(listing, step)
        except crash_guard.Crash as crash:
            died = Diag("error", crash.message(), "loc(unknown)")
            return None, self._crash_diagnostics([*errors, died], target, resolver)
        return (sent.restore(torch_module.context) if sent else None), diags

    def _crash_diagnostics(self, errors: list[Diag], target: str,
                           resolver: LocationResolver) -> list[LensDiagnostic]:
        return self._located(illegal_ops.error_diagnostics(errors, target, resolver))

    def _list(self, target: str, torch_module: Any, errors: list[Diag],
              resolver: LocationResolver, crashing: list[illegal_ops.FoundOp] | None = None,
              ) -> tuple[partial.Partial | None, list[LensDiagnostic]]:
        # Scalars at the function's boundary: a culprit of their own, and no partial IR (the
        # function itself cannot be converted).
        boundary = scalar_boundary.boundary_diagnostics(torch_module, target, errors, resolver,
                                                        self._forward())
        if boundary:
            errors = [d for d in errors if not scalar_boundary.is_boundary_error(d)]
        part = None if boundary else partial.lower_partially(torch_module, target,
                                                             resolver=resolver,
                                                             crashing=crashing)
        if part is not None:
            diags = self._group(_rejected(part), target, resolver, torch_module)
            if not part.complete:
                diags.append(illegal_ops.incomplete_warning(target))
            return part, self._located(diags)

        def grouped(found: list[illegal_ops.FoundOp]) -> list[LensDiagnostic]:
            rejected = [culprit_diags.Rejected(i, f.name, f.location, f.message,
                                               culprit_diags.guess_tensor(f.name))
                        for i, f in enumerate(found)]
            return self._group(rejected, target, resolver, torch_module)

        listed = illegal_ops.list_unsupported(torch_module, target, errors, resolver,
                                              to_diagnostics=grouped)
        return None, self._located(illegal_ops.drop_contract_errors(listed + boundary))

    def _listed_only(self, target: str, torch_module: Any,
                     resolver: LocationResolver) -> list[LensDiagnostic]:
        """The backend's rejects in a module (ops torch-mlir does not know already outlined)
        that has no partial lowering: every op that fails alone, grouped as culprits."""
        def grouped(found: list[illegal_ops.FoundOp]) -> list[LensDiagnostic]:
            rejected = [culprit_diags.Rejected(i, f.name, f.location, f.message,
                                               culprit_diags.guess_tensor(f.name))
                        for i, f in enumerate(found)]
            return self._group(rejected, target, resolver, torch_module)

        found, complete = illegal_ops.find_unsupported(torch_module, target, resolver)
        culprits = [f for f in found if not f.lowers_alone]
        diags = grouped(culprits) if culprits else []
        if not complete:
            diags.append(illegal_ops.incomplete_warning(target))
        return diags

    def torch_level(self, target: str, raw_module: Any, errors: list[Diag], *,
                    listed: bool = True) -> tuple[Shown | None, list[LensDiagnostic]]:
        """When torch-mlir itself rejects ops: the IR reached with them outlined (the Torch
        module, or the target's partial lowering) with its call symbols, and every culprit,
        torch-level and the backend's."""
        if target in self._torch:
            return self._torch[target]
        resolver = LocationResolver(self.users)
        if crash_guard.worth_forking(raw_module.context):
            shown, diags = self._torch_listing_forked(target, raw_module, errors, resolver,
                                                      listed)
        else:
            shown, diags = self._torch_listing(target, raw_module, errors, resolver, listed)
        self._torch[target] = (shown, self._located(diags))
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
            diags = illegal_ops.list_torch_level(raw_module, errors, resolver, target,
                                                 self._call_namer(raw_module, resolver))
            diags += illegal_ops.error_diagnostics(
                [Diag("error", crash.message(), "loc(unknown)")], target, resolver)
        shown: Shown | None = None
        if sent is not None:
            crash_guard.load_dialects(pipeline, ctx)
            crash_guard.load_dialects(TORCH_BACKEND_PIPELINE, ctx)
            with ctx:
                shown = ir.Module.parse(sent[0], context=ctx).operation, sent[1]
        return shown, diags

    def _call_namer(self, raw_module: Any, resolver: LocationResolver
                    ) -> Callable[[str, str], str]:
        """(short op name, MLIR location) → the Python call it comes from, as culprits name
        it: an op torch-mlir does not know is named like any other culprit."""
        @functools.cache
        def ir_ops() -> dict[fx_origins.Chain, set[str]]:  # a walk of the module: only if asked
            return fx_origins.ir_ops_by_chain(raw_module, resolver)

        def name(op: str, location: str) -> str:
            chain = fx_origins.first_chain(resolver, location)
            origin = self._fx_calls().origin(op, chain, ir_ops().get(chain, set()))
            return culprit_diags.cause_text(origin, [op])

        return name

    def _torch_listing(self, target: str, raw_module: Any, errors: list[Diag],
                       resolver: LocationResolver, listed: bool,
                       ) -> tuple[Shown | None, list[LensDiagnostic]]:
        diags = illegal_ops.list_torch_level(raw_module, errors, resolver, target,
                                             self._call_namer(raw_module, resolver))
        shown: Shown | None = None
        try:
            outlined = partial.outline_torch_operators(raw_module, TORCH_BACKEND_PIPELINE)
            if outlined is not None and listed:
                module, symbols = outlined
                if target == "torch":
                    shown = module, symbols
                elif target in targets.BACKEND_PIPELINES:
                    part = partial.lower_partially(module, target, outlined_already=True,
                                                   resolver=resolver)
                    if part is not None:
                        more = self._group(_rejected(part), target, resolver, module)
                        shown = part.module, symbols | {c.symbol for c in part.culprits
                                                        if c.symbol}
                    else:  # no partial IR (a complex weight TOSA cannot hold): listed only
                        more = self._listed_only(target, module, resolver)
                    diags = sorted(diags + more, key=lambda d: (d.line is None, d.line or 0))
        except partial.StepCrash as crash:
            diags += illegal_ops.error_diagnostics([crash.diag], target, resolver)
        except Exception:  # best effort: the torch-level listing stands without it
            shown = None
        return shown, diags


__all__ = ["Failures"]

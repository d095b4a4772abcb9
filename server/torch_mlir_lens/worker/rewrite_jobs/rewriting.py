"""The worker's jobs about rewrites, on a program its job cache holds (worker/job_handlers.py).

    Rewriting(variants, fn, args, kwargs, specs)
        .lowerer(target)      → (ProgramLowerer, rewrites used) for a lower/verify target
        .report(targets)      → RewriteReport: every culprit's proven rewrites (`rewrites` job)
        .export_code(...)     → standalone Python reproducing the IR (`export-code` job)

Proofs are kept with the program (`Variants.offers`): a lowering with `auto` after a
`rewrites` job, or a second job, proves nothing again.
"""

from __future__ import annotations

import time
from typing import Any

from torch_mlir_lens.protocol.rewrite_results import SPECIALIZE, RewriteReport
from torch_mlir_lens.rules.rewrite_specs import RewriteSpec
from torch_mlir_lens.worker.rewrite_jobs.offers import target_offers
from torch_mlir_lens.worker.rewrite_jobs.proof import Prover
from torch_mlir_lens.worker.rewrite_jobs.variants import Variants
from torch_mlir_lens.worker.rewrites.snippet import ExportCodeSpec, export_code


def _custom_ops(program: Any) -> dict[str, Any]:
    """The library custom ops of the program that the product traces through an equivalent
    (custom_ops.py): the export code needs the same entries."""
    from torch_mlir_lens.worker.rewrites.apply import exported_of
    from torch_mlir_lens.worker.shims.custom_ops import EQUIVALENTS

    exported = exported_of(program) or program
    found = {}
    for node in exported.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and schema is not None and schema.name in EQUIVALENTS:
            found[schema.name] = EQUIVALENTS[schema.name]
    return found


class Rewriting:
    """One program's rewrites as a job asks for them."""

    def __init__(self, variants: Variants, fn: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any], specs: list[RewriteSpec]) -> None:
        self.variants = variants
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.specs = specs

    def lowerer(self, target: str) -> tuple[Any, list[str]]:
        """The lowerer `target` is lowered with, and the rewrites it went through."""
        if not self.specs:
            return self.variants.base, []
        return self.variants.for_target(self.specs, target, self._proven)

    def _proven(self, target: str) -> list[str]:
        report = self.report([target])
        return list(dict.fromkeys(n for o in report.offers if o.offered for n in o.rewrites))

    def export_code(self, path: str, module: str, target: str, inputs: tuple[str | None, str],
                    init_expr: str | None, dynamic_shapes: Any) -> dict[str, Any]:
        """The standalone Python of snippet.py for `target`: `{"code", "rewrites"}`.
        `inputs`: (the written inputs expression or None, where the inputs came from)."""
        from torch_mlir_lens.worker.rewrites.candidates import by_name
        from torch_mlir_lens.worker.rewrites.pins import pin_names, pinnable

        _lowerer, used = self.lowerer(target)
        rewrites = [r for r in map(by_name, used) if r is not None]
        pinned = {n: pinnable(self.fn, n)[0] for n in pin_names(s.name for s in self.specs)}
        specialize = any(s.name == SPECIALIZE for s in self.specs)
        spec = ExportCodeSpec(path=path, module=module, target=target, rewrites=rewrites,
                              inputs_expr=inputs[0], inputs_source=inputs[1], args=self.args,
                              kwargs=self.kwargs, init_expr=init_expr,
                              custom_ops=_custom_ops(self.variants.base.program),
                              dynamic_shapes=dynamic_shapes, pins=pinned, specialize=specialize)
        return {"code": export_code(spec), "rewrites": [
            *(f"pin.{n}" for n in pinned), *([SPECIALIZE] if specialize else []), *used]}

    def report(self, targets: list[str]) -> RewriteReport:
        """Each culprit of `targets` with its proven rewrites, or why none."""
        start = time.perf_counter()
        report = RewriteReport(self.variants.base.module_name)
        for target in targets:
            if target not in self.variants.offers:
                if self.variants.prover is None:
                    self.variants.prover = Prover(self.variants.base, self.fn, self.args,
                                                  self.kwargs)
                self.variants.offers[target] = target_offers(self.variants.prover, target)
            report.offers.extend(self.variants.offers[target])
        report.timings["total"] = round(time.perf_counter() - start, 6)
        return report


__all__ = ["Rewriting"]

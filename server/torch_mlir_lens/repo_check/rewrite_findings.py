"""What `check` says of rewrites: per finding, whether a proven rewrite takes the module past
it and its error (`findings/proven.py`); per target lowered through rewrites
(`--rewrites auto`), which.

    add_rewrites(entry, findings, report, text, path, module)   one module's entry and findings
    prove_rewrites(engine, job, failing, entry, findings, ...)   the proof, then the above

A finding's `rewrite` is `findings.proven.summary`'s; the same sits on the entry's unsupported
op. No torch: the worker proves (worker/rewrites/), this only reads its report.
"""

from __future__ import annotations

from typing import Any

from torch_mlir_lens.findings import Finding, proven
from torch_mlir_lens.findings.proven import rewrite_note
from torch_mlir_lens.protocol.results import LensError, LowerResult
from torch_mlir_lens.protocol.rewrite_results import RewriteReport


def add_rewrites(entry: dict[str, Any], findings: list[Finding], report: RewriteReport,
                 text: str | None, path: str, module: str) -> None:
    """Put each culprit's proven rewrite (or why none) on its finding and on the entry's
    unsupported op. `text`: the module's file as checked (None: no edit is offered, as in a
    notebook, whose fixes would be edits of cells)."""
    proven.with_proofs(findings, report, proven.module_edit(report, text, path, module))
    for target, verdict in entry.get("targets", {}).items():
        for unsupported in verdict.get("unsupported", []):
            op = str(unsupported.get("op") or "").removeprefix("torch.")
            offer = proven.offer_for(report.offers, target, unsupported.get("line"), op)
            if offer is not None:
                unsupported["rewrite"] = proven.summary(offer)


def add_used(entry: dict[str, Any], results: list[LowerResult]) -> None:
    """The rewrites each target was lowered through (`--rewrites auto`, or asked for)."""
    for result in results:
        verdict = entry.get("targets", {}).get(result.target)
        if verdict is not None and result.rewrites:
            verdict["rewrites"] = list(result.rewrites)


async def prove_rewrites(engine: Any, job: Any, failing: list[str], entry: dict[str, Any],
                         findings: list[Finding], text: str | None, path: str,
                         module: str) -> None:
    """Prove the rewrites of the culprits of the `failing` targets (the engine's `rewrites`
    job) and add them to `entry` and `findings` (`add_rewrites`); a proof that cannot run
    only says why in `entry["rewrites_error"]`: it adds to a report, never takes away."""
    if not failing:
        return
    try:
        report = await engine.rewrites(job, failing)
    except LensError as err:
        entry["rewrites_error"] = err.message
        return
    add_rewrites(entry, findings, report, text, path, module)


__all__ = ["add_rewrites", "add_used", "prove_rewrites", "rewrite_note"]

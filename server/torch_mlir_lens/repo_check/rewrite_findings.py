"""What `check` says of rewrites: per finding, whether a proven rewrite takes the module past
it and its error; per target lowered through rewrites (`--rewrites auto`), which.

    add_rewrites(entry, findings, report, text, path, module)   one module's entry and findings
    rewrite_note(summary)                                       the text listing's line

A finding's `rewrite` is `{"rewrites", "max_abs", "max_rel", "verify", "spec", "edit"}` when
one is proven (`edit`: the one-line change of the module's comment that applies it, which SARIF
gives as a fix), or `{"rewrites": [], "why"}` when none is; the same sits on the entry's
unsupported op. No torch: the worker proves (worker/rewrites/), this only reads its report.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from torch_mlir_lens.protocol.results import LensError, LowerResult
from torch_mlir_lens.protocol.rewrite_results import RewriteOffer, RewriteReport
from torch_mlir_lens.repo_check.findings import Finding
from torch_mlir_lens.rules.rewrite_specs import CommentEdit, RewriteSpec, comment_edit, spec_text


def _summary(offer: RewriteOffer, edit: CommentEdit | None) -> dict[str, Any]:
    if not offer.offered:
        return {"rewrites": [], "why": offer.why}
    out: dict[str, Any] = {
        "rewrites": list(offer.rewrites), "max_abs": offer.max_abs, "max_rel": offer.max_rel,
        "verify": offer.verify,
        "spec": spec_text(RewriteSpec(n, offer.target) for n in offer.rewrites),
    }
    if edit is not None:  # what the fix writes: every proven rewrite of the module
        out["edit"] = asdict(edit)
        out["spec"] = edit.text.split("rewrites=", 1)[1]
    return out


def _module_edit(report: RewriteReport, text: str | None, path: str,
                 module: str) -> CommentEdit | None:
    """One edit for the whole module: every proven rewrite on its backend, so that applying
    any finding's fix (or all of them) lowers the module through all of them."""
    # A pin acts at export, for every backend: written once, without one.
    pairs: list[tuple[str, str | None]] = list(dict.fromkeys(
        (n, None if o.op == EXPORT_OP else o.target) for o in report.offers if o.offered
        for n in o.rewrites))
    if text is None or not pairs:
        return None
    from torch_mlir_lens.discovery import find_modules

    info = next((m for m in find_modules(text, path) if m.name == module), None)
    return comment_edit(text.splitlines(), info, pairs) if info is not None else None


EXPORT_OP = "torch.export"  # an export refusal's offer (a pin), which names no op


def _offer_for(offers: list[RewriteOffer], target: str | None, line: int | None,
               op: str | None) -> RewriteOffer | None:
    for offer in offers:
        if offer.op == EXPORT_OP and op is None and offer.line == line:
            return offer  # an export refusal: one finding, the same offer on every target
        if offer.target == target and offer.line == line and (
                op in offer.ops or op == offer.op):
            return offer
    return None


def add_rewrites(entry: dict[str, Any], findings: list[Finding], report: RewriteReport,
                 text: str | None, path: str, module: str) -> None:
    """Put each culprit's proven rewrite (or why none) on its finding and on the entry's
    unsupported op. `text`: the module's file as checked (None: no edit is offered, as in a
    notebook, whose fixes would be edits of cells)."""
    edit = _module_edit(report, text, path, module)
    for finding in findings:
        offer = _offer_for(report.offers, finding.target, finding.line, finding.op)
        if offer is not None:
            finding.rewrite = _summary(offer, edit)
    for target, verdict in entry.get("targets", {}).items():
        for unsupported in verdict.get("unsupported", []):
            op = str(unsupported.get("op") or "").removeprefix("torch.")
            offer = _offer_for(report.offers, target, unsupported.get("line"), op)
            if offer is not None:
                unsupported["rewrite"] = _summary(offer, None)


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


def rewrite_note(summary: dict[str, Any]) -> str:
    """`verified rewrite: erfinv (max error 1.2e-07), add `rewrites=erfinv@tosa``, or why
    none is."""
    names = summary.get("rewrites") or []
    if not names:
        return f"no verified rewrite ({summary.get('why') or 'none known'})"
    err = summary.get("max_abs")
    error = f"max error {err:.2g} on the example inputs" if isinstance(err, float) else ""
    return (f"verified rewrite: {', '.join(names)} ({error}); lower with "
            f"`# torch-mlir-lens: rewrites={summary.get('spec')}`")


__all__ = ["add_rewrites", "add_used", "prove_rewrites", "rewrite_note"]

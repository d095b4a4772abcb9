"""The proven way past a finding: the rewrites a `rewrites` job proved for its culprit (or for
an export refusal: a pin), with their error on the example inputs, or why there is none.

A finding's `rewrite` is `{"rewrites", "max_abs", "max_rel", "verify", "spec", "edit"}` when
one is proven (`edit`: the one-line change of the module's comment that applies every proven
rewrite of the module, which SARIF gives as a fix and the editor's quick fix writes), or
`{"rewrites": [], "why"}` when none is. No torch: the worker proves (worker/rewrite_jobs/),
this only reads its report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from torch_mlir_lens.findings.finding import Finding
from torch_mlir_lens.protocol.rewrite_results import RewriteOffer, RewriteReport
from torch_mlir_lens.rules.rewrite_specs import CommentEdit, RewriteSpec, comment_edit, spec_text

EXPORT_OP = "torch.export"  # an export refusal's offer (a pin), which names no op


def summary(offer: RewriteOffer, edit: CommentEdit | None = None) -> dict[str, Any]:
    """An offer as a finding's `rewrite`."""
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


def module_edit(report: RewriteReport, text: str | None, path: str,
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


def offer_for(offers: Iterable[RewriteOffer], target: str | None, line: int | None,
              op: str | None) -> RewriteOffer | None:
    """The offer answering a culprit (by backend, line and op), or an export refusal (by line:
    one offer for every backend)."""
    for offer in offers:
        if offer.op == EXPORT_OP and op is None and offer.line == line:
            return offer
        if offer.target == target and offer.line == line and (
                op in offer.ops or op == offer.op):
            return offer
    return None


def with_proofs(findings: Iterable[Finding], report: RewriteReport,
                edit: CommentEdit | None = None) -> None:
    """Put each finding's proven rewrite (or why none) on it (`edit`: the module's comment
    change that applies them, when the caller can offer one)."""
    for finding in findings:
        offer = offer_for(report.offers, finding.target, finding.line, finding.op)
        if offer is not None:
            finding.rewrite = summary(offer, edit)


def rewrite_note(rewrite: dict[str, Any]) -> str:
    """`verified rewrite: erfinv (max error 1.2e-07), add `rewrites=erfinv@tosa``, or why
    none is."""
    names = rewrite.get("rewrites") or []
    if not names:
        return f"no verified rewrite ({rewrite.get('why') or 'none known'})"
    err = rewrite.get("max_abs")
    error = f"max error {err:.2g} on the example inputs" if isinstance(err, float) else ""
    return (f"verified rewrite: {', '.join(names)} ({error}); lower with "
            f"`# torch-mlir-lens: rewrites={rewrite.get('spec')}`")

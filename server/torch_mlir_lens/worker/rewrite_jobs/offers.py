"""A module's offers: for each op a backend rejects, the rewrites proven to take it past.

    module_offers(lowerer, fn, args, kwargs, targets)   → RewriteReport

Per backend: each culprit's ops get the first candidate (candidates.py) that passes steps (a)
and (b) of proof.py; the culprits whose every op has one are then proven together on the
whole module (c). When that fails and there are several, each is proven with its own
rewrites alone, so that one bad pairing does not hide the others. Every candidate tried is
reported with its verdict (the benchmark counts the rejected ones and why).
"""

from __future__ import annotations

import time
from typing import Any

from torch_mlir_lens.protocol.results import LensDiagnostic, LowerResult
from torch_mlir_lens.protocol.rewrite_results import RewriteCheck, RewriteOffer, RewriteReport
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.worker.rewrite_jobs.proof import ModuleProof, Prover
from torch_mlir_lens.worker.rewrites import capture
from torch_mlir_lens.worker.rewrites.candidates import by_name, candidates
from torch_mlir_lens.worker.rewrites.table import Rewrite


def _offer(diag: LensDiagnostic, target: str) -> RewriteOffer:
    ops = [culprits.short_op(o) for o in (diag.ops or [diag.op or ""])]
    return RewriteOffer(target=target, file=diag.file, line=diag.line,
                        op=culprits.short_op(diag.op), ops=list(dict.fromkeys(ops)),
                        cause=culprits.cause_of(diag))


def _call_of(prover: Prover, offer: RewriteOffer, op: str) -> tuple[str, Any]:
    """The op to rewrite for a culprit op, and the program it is a call of: itself when the
    program calls it at its line; else the call torch-mlir or torch's decompositions made it
    of (`torch.roll` made into slices: `aten.roll`; `F.adaptive_max_pool1d` made into a
    max-pool and asserts: `aten.adaptive_max_pool1d`, found in the program as exported),
    among the calls of that line: the one the culprit's cause names, else one a library
    rewrite of the culprit answers too."""
    from torch_mlir_lens.worker.rewrites.apply import exported_of
    from torch_mlir_lens.worker.rewrites.library import LIBRARY

    decomposed = prover.lowerer.program
    if capture.nodes_of(decomposed, op, offer.file, offer.line, anywhere=False):
        return op, decomposed
    called = offer.cause.split("`")[1] if offer.cause.count("`") >= 2 else ""
    name = called.rsplit(".", 1)[-1]
    kin = [r for r in LIBRARY.values() if r.answers(op)]
    programs = [p for p in (decomposed, exported_of(decomposed)) if p is not None]
    for program in programs:
        at_line = capture.calls_at(program, offer.file, offer.line)
        short = {c: c.split(".")[1] if c.count(".") else c for c in at_line}
        for pick in ([c for c in at_line if name and short[c] == name],
                     [c for c in at_line if name and (short[c].startswith(name)
                                                       or name.startswith(short[c]))],
                     [c for c in at_line if any(r.answers(c) for r in kin)]):
            if pick:
                return pick[0], program
    return op, decomposed


def _choose(prover: Prover, offer: RewriteOffer, target: str,
            tried: dict[tuple[str, str, int | None, str], RewriteCheck]) -> list[Rewrite]:
    """The first candidate passing (a) and (b) for each op of the culprit ([] when an op has
    none); every check lands in `offer.checks`."""
    chosen: list[Rewrite] = []
    prover.lowerer.raw_module()  # the FX import freezes the program (capture.py reads it so)
    for culprit_op in offer.ops:
        if any(r.answers(culprit_op) for r in chosen):
            continue  # one rewrite answers several of its ops (empty tensors)
        op, program = _call_of(prover, offer, culprit_op)
        found: RewriteCheck | None = None
        for rewrite in candidates(op):
            key = (rewrite.name, op, offer.line, target)
            check = tried.get(key)
            if check is None:
                check = tried[key] = prover.alone(rewrite, op, offer.file, offer.line, target,
                                                  program)
            offer.checks.append(check)
            if check.ok:
                found = check
                chosen.append(rewrite)
                # and what its own decomposition needs the backend to be helped with
                chosen += [r for r in map(by_name, check.with_rewrites) if r is not None]
                break
        if found is None:
            offer.why = offer.why or (f"no candidate rewrite of `{op}` passes its proof"
                                      if offer.checks else f"no rewrite of `{op}` is known")
            return []
    return list({r.name: r for r in chosen}.values())


def _worst(offer: RewriteOffer) -> None:
    passed = [c for c in offer.checks if c.ok and c.rewrite in offer.rewrites]
    if passed:
        offer.max_abs = max((c.examples.max_abs for c in passed if c.examples), default=0.0)
        offer.max_rel = max((c.examples.max_rel for c in passed if c.examples), default=0.0)


def _verdict(proof: ModuleProof, target: str) -> str:
    """Verify's verdict on the module rewritten, saying whose IR ran when not the backend's."""
    if proof.verify is None:
        return ""
    if proof.ran_on and proof.ran_on != target:
        return f"{proof.verify.message} (ran {target_title(proof.ran_on)}'s IR: " \
               f"{target_title(target)}'s does not run on LLVM here)"
    return proof.verify.message


def _target_offers(prover: Prover, result: LowerResult, target: str) -> list[RewriteOffer]:
    tried: dict[tuple[str, str, int | None, str], RewriteCheck] = {}
    answered: list[tuple[RewriteOffer, LensDiagnostic, list[Rewrite]]] = []
    out: list[RewriteOffer] = []
    for diag in culprits.culprit_diagnostics(result.diagnostics):
        offer = _offer(diag, target)
        out.append(offer)
        chosen = _choose(prover, offer, target, tried)
        if chosen:
            answered.append((offer, diag, chosen))
    if not answered:
        return out
    together = list({r.name: r for _o, _d, rs in answered for r in rs}.values())
    proof = prover.module(together, target)
    for offer, diag, chosen in answered:
        own = proof
        if (not proof.verified or proof.still_rejects(diag)) and len(answered) > 1:
            own = prover.module(chosen, target)  # proven with its own rewrites alone
        if own.verified and not own.still_rejects(diag):
            offer.rewrites = [r.name for r in chosen]
            offer.verified = True
            offer.verify = _verdict(own, target)
            _worst(offer)
        else:
            offer.why = own.why or f"`{offer.op}` is still rejected with the rewrites"
            offer.verify = _verdict(own, target)
    return out


def target_offers(prover: Prover, target: str) -> list[RewriteOffer]:
    """The proven rewrites of every culprit of the prover's program on `target`."""
    result = prover.lowerer.lower(target)
    return [] if result.ok else _target_offers(prover, result, target)


def module_offers(lowerer: Any, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                  targets: list[str]) -> RewriteReport:
    """The proven rewrites of every culprit of `lowerer`'s program on each of `targets`."""
    start = time.perf_counter()
    prover = Prover(lowerer, fn, args, kwargs)
    report = RewriteReport(lowerer.module_name)
    for target in targets:
        report.offers.extend(target_offers(prover, target))
    report.timings["total"] = round(time.perf_counter() - start, 6)
    return report


__all__ = ["module_offers", "target_offers"]

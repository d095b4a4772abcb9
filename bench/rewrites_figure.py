"""Figure 15: rewrites past rejected ops, over torch-mlir's e2e suite and the broad sweep.

For each (module, backend) pair that fails, the product's own proof (worker/rewrites/) runs on
it as the `rewrites` job does: every culprit's candidates are tried, the proven ones offered.
Then the module is lowered with every offered rewrite and, when the backend takes it whole,
Verify runs that backend's IR (converted to Linalg, on LLVM) against eager PyTorch.

    outcome(lowerer, module, args, kwargs, target)   → the row part of one failing pair
    summary(pairs)                                   → the figure's counts, per backend
    python -m bench.rewrites_figure ROWS.jsonl...    → the figure of rows already written

Rows come from `python -m bench.e2e_suite --rewrites` and `python -m bench.broad_sweep
--rewrites`: each failing backend of a row carries `rewrites` (this module's `outcome`).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

BACKENDS = ("linalg", "tosa", "stablehlo")


def _offers_row(offers: list[Any]) -> dict[str, Any]:
    """The row part every outcome shares: each culprit's offer, each candidate's check, the
    rewrites offered; not yet lowered nor verified."""
    return {
        "culprits": [{"ops": o.ops, "offered": o.offered, "rewrites": o.rewrites,
                      "why": o.why[:200], "max_abs": o.max_abs} for o in offers],
        "checks": [{"rewrite": c.rewrite, "op": c.op, "ok": c.ok, "why": c.why[:200]}
                   for o in offers for c in o.checks],
        "offered": sorted({n for o in offers if o.offered for n in o.rewrites}),
        "lowers": False, "verified": False, "verify": "",
    }


def outcome(lowerer: Any, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
            target: str) -> dict[str, Any]:
    """Offers for one failing pair, then the module lowered with all of them and verified."""
    from torch_mlir_lens.worker.rewrite_jobs.offers import target_offers
    from torch_mlir_lens.worker.rewrite_jobs.proof import Prover
    from torch_mlir_lens.worker.rewrites.candidates import by_name

    start = time.perf_counter()
    prover = Prover(lowerer, module, args, kwargs)
    offers = target_offers(prover, target)
    row = _offers_row(offers)
    names = row["offered"]
    if names and all(o.offered for o in offers):
        proof = prover.module([r for r in map(by_name, names) if r is not None], target)
        row["lowers"] = bool(proof.result is not None and proof.result.ok)
        row["verified"] = row["lowers"] and proof.verified
        row["verify"] = proof.verify.message if proof.verify else proof.why[:200]
        row["verify_kind"] = str(proof.verify.kind or "") if proof.verify else ""
        row["ran_on"] = proof.ran_on
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row


async def engine_outcome(engine: Any, job: Any, target: str) -> dict[str, Any]:
    """`outcome` through the product's engine, as a user gets it: the `rewrites` job, then a
    lowering with `rewrites=auto` and Verify of that backend's IR."""
    import dataclasses

    from torch_mlir_lens.protocol.results import LensError

    start = time.perf_counter()
    try:
        report = await engine.rewrites(job, [target])
    except LensError as err:
        return {"error": f"{err.kind}: {err.message}"[:200],
                "seconds": round(time.perf_counter() - start, 3)}
    offers = report.for_target(target)
    row = _offers_row(offers)
    names = row["offered"]
    if names and all(o.offered for o in offers):
        auto = dataclasses.replace(job, rewrites=[f"{n}@{target}" for n in names])
        try:
            (result,) = await engine.lower(auto, targets=[target])
            row["lowers"] = bool(result.ok)
            if result.ok:  # that backend's IR run; Linalg's when it cannot run here
                for run_on in dict.fromkeys([target, "linalg"]):
                    ran = dataclasses.replace(job, rewrites=[f"{n}@{run_on}" for n in names])
                    verify = await engine.verify(ran, target=run_on)
                    row["verified"], row["verify"] = bool(verify.ok), verify.message[:200]
                    row["verify_kind"], row["ran_on"] = str(verify.kind or ""), run_on
                    if verify.ok or verify.kind == "verify-mismatch":
                        break
        except LensError as err:
            row["verify"] = f"{err.kind}: {err.message}"[:200]
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row


def _pairs(rows: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """(module, backend, its result with `rewrites`) of every failing pair of the rows: e2e
    rows hold each backend's result at the top, broad-sweep rows under `product` (their
    proofs under `rewrites`)."""
    out = []
    for row in rows:
        for target in BACKENDS:
            res = row.get(target) if target in row else (row.get("product") or {}).get(target)
            if isinstance(res, dict) and res.get("ok") is False:
                if "product" in row and (row.get("rewrites") or {}).get(target) is not None:
                    res = {**res, "rewrites": row["rewrites"][target]}
                name = row.get("test") or row.get("type") or "?"
                out.append((name, target, res))
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per backend: failing pairs, pairs that lower and verify with rewrites, distinct culprit
    ops with a rewrite, rewrites offered that fail Verify, and the rejected candidates by why."""
    out: dict[str, Any] = {}
    for target in BACKENDS:
        pairs = [(m, res) for m, t, res in _pairs(rows) if t == target]
        tried = [(m, res["rewrites"]) for m, res in pairs
                 if isinstance(res.get("rewrites"), dict) and "error" not in res["rewrites"]]
        fixed = [m for m, r in tried if r["verified"]]
        own_ir = [m for m, r in tried if r["verified"] and r.get("ran_on", target) == target]
        # Offered, lowered, and Verify then found the values differ: never acceptable.
        wrong = [m for m, r in tried if r["lowers"] and r["offered"] and not r["verified"]
                 and r.get("verify_kind") == "verify-mismatch"]
        unverified = [m for m, r in tried if r["lowers"] and r["offered"] and not r["verified"]
                      and r.get("verify_kind") != "verify-mismatch"]
        ops_with = {op for _m, r in tried for c in r["culprits"] if c["offered"]
                    for op in c["ops"]}
        ops_all = {op for _m, r in tried for c in r["culprits"] for op in c["ops"]}
        rejected: Counter[str] = Counter()
        for _m, r in tried:
            for c in r["checks"]:
                if not c["ok"]:
                    rejected[_why_kind(c["why"])] += 1
        out[target] = {
            "failing": len(pairs), "tried": len(tried), "lower_and_verify": len(fixed),
            "verified_on_own_ir": len(own_ir), "offered_failing_verify": wrong,
            "offered_not_run": unverified, "culprit_ops": len(ops_all),
            "culprit_ops_with_rewrite": sorted(ops_with),
            "rejected_by_proof": dict(rejected.most_common()),
        }
    return out


def _why_kind(why: str) -> str:
    """A rejected candidate's reason, by kind (the figure counts them)."""
    for needle, kind in (("does not lower alone", "does not lower alone"),
                         ("differs from the op on the example", "differs on the example inputs"),
                         ("differs from the op on edge", "differs on edge cases"),
                         ("fails on edge", "fails on edge cases"),
                         ("cannot be traced", "cannot be traced"),
                         ("dynamic", "dynamic sizes: not tried"),
                         ("made by torch-mlir", "made by torch-mlir's decompositions")):
        if needle in why:
            return kind
    return why.split(":")[0][:60] or "other"


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.rewrites_figure", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows", nargs="+", type=Path, help="JSON-lines rows with `rewrites`")
    args = ap.parse_args()
    rows: dict[str, dict[str, Any]] = {}
    for path in args.rows:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row.get("test") or row.get("type") or str(len(rows))] = row
    print(json.dumps(summary(list(rows.values())), indent=1))


if __name__ == "__main__":
    main()

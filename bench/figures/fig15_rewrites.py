"""Figure 15: rewrites past rejected ops, proven before they are offered, over two corpora.

torch-mlir's own e2e suite (`bench/e2e_suite.py --rewrites`, on a checkout named by
`$TORCH_MLIR_E2E_SUITE`, its `projects/pt1/python`; without it, the rows of an earlier run in
the work folder) and the broad `transformers` sweep (`bench/broad_sweep.py --rewrites`, on the
architectures figure 13 found failing, else a representative few). For each failing
(module, backend) pair the product proves the rewrites of its culprits as the editor's quick
fix and `check` do; then the module is lowered through every proven one and Verify runs that
backend's IR against eager PyTorch (bench/rewrites_figure.py).

Per corpus and backend: failing pairs, pairs that lower and verify with rewrites, distinct
culprit ops with a proven rewrite, and candidate rewrites the proof refused (by why).
Targets: on the e2e suite, at least half of the failing TOSA and StableHLO pairs lower and
verify with rewrites; no pair offered rewrites that then fail Verify.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.broad_sweep import read_rows, sweep
from bench.context import Context
from bench.report import FigureResult, Metric
from bench.rewrites_figure import summary

NUMBER = 15
NAME = "rewrites"
TITLE = "rewrites past rejected ops, proven (e2e suite, broad sweep)"
IN_SMOKE = False  # the e2e suite's failing tests and the broad sweep's: over an hour
TIMEOUT_S = 8 * 3600.0
SUITE_ENV = "TORCH_MLIR_E2E_SUITE"
QUICK_TYPES = ("phimoe", "mixtral", "qwen2_moe", "qwen3_5", "vit_mae", "yoso")
REPO = Path(__file__).resolve().parents[2]


def _e2e_rows(ctx: Context) -> list[dict[str, Any]]:
    """The e2e suite's rows with rewrites: run now when a checkout is named, else an earlier
    run's (none: the corpus is left out)."""
    rows = ctx.work / "e2e_rewrites.jsonl"
    suite = os.environ.get(SUITE_ENV)
    if suite:
        subprocess.run([sys.executable, "-m", "bench.e2e_suite", "--suite", suite,
                        "--rewrites", "--rows", str(rows)], cwd=REPO, check=False,
                       timeout=TIMEOUT_S)
    if not rows.exists():
        return []
    last: dict[str, dict[str, Any]] = {}
    for line in rows.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            last[row["test"]] = row
    return list(last.values())


async def _broad_rows(ctx: Context) -> list[dict[str, Any]]:
    """The broad sweep again, with rewrites, on the architectures figure 13 found failing."""
    earlier = read_rows(ctx.work / "broad_rows.jsonl")
    failing = [r.type for r in earlier
               if r.exported and any(not p.get("ok") for p in r.product.values())]
    types = failing if failing and not ctx.config.quick else list(QUICK_TYPES)
    rows = await sweep(types, ctx.work / "broad_rewrites.jsonl", python=ctx.config.python,
                       log=ctx.log_path("baseline-fig15"), rewrites=True, compare=False)
    return [json.loads(json.dumps(r.__dict__)) for r in rows]


def add_metrics(result: FigureResult, corpus: str, counts: dict[str, Any],
                target_share: bool) -> None:
    """The figure's lines for one corpus (`counts`: rewrites_figure.summary)."""
    failing = fixed = 0
    for backend, c in counts.items():
        result.metrics.append(Metric(f"{corpus} {backend}: failing pairs",
                                     float(c["failing"]), "count", None))
        result.metrics.append(Metric(
            f"{corpus} {backend}: lower and verify with rewrites", float(c["lower_and_verify"]),
            "count", None))
        result.metrics.append(Metric(
            f"{corpus} {backend}: culprit ops with a rewrite",
            float(len(c["culprit_ops_with_rewrite"])), "count", None,
            note=f"of {c['culprit_ops']}: " + ", ".join(c["culprit_ops_with_rewrite"])))
        result.metrics.append(Metric(
            f"{corpus} {backend}: offered, then failing Verify",
            float(len(c["offered_failing_verify"])), "count", 0.0, "<=",
            note=", ".join(c["offered_failing_verify"])))
        rejected = ", ".join(f"{why}: {n}" for why, n in c["rejected_by_proof"].items())
        result.details[f"{corpus} {backend}: refused by the proof"] = rejected or "none"
        if backend in ("tosa", "stablehlo"):
            failing += c["failing"]
            fixed += c["lower_and_verify"]
    if target_share and failing:
        result.metrics.append(Metric(
            f"{corpus} TOSA + StableHLO: share of failing pairs that lower and verify",
            fixed / failing, "ratio", 0.5, ">=", note=f"{fixed} of {failing}"))


async def run(ctx: Context) -> FigureResult:
    """Both corpora, then their counts."""
    result = FigureResult(NUMBER, TITLE)
    e2e = _e2e_rows(ctx)
    if e2e:
        add_metrics(result, "e2e", summary(e2e), target_share=True)
    else:
        result.details["e2e"] = f"not run: set {SUITE_ENV} to a torch-mlir checkout's " \
                                "projects/pt1/python"
    add_metrics(result, "broad", summary(await _broad_rows(ctx)), target_share=False)
    return result

"""Figure 17: ONNX models: every model of the onnx wheel's test data, the product against plain
torch-mlir, per backend.

`bench/onnx_sweep.py` (in a process of its own) takes each model of `onnx/backend/test/data/`
(`light/`, `simple/`, `pytorch-operator/`, `pytorch-converted/`; `real/` holds no model file)
and each backend: plain torch-mlir as `torch-mlir-import-onnx` and the pipelines run it; the
product as the model is, then with `--rewrites auto` (its proven ONNX fixes: opset upgrade,
static shapes, shape folding); where the product lowers, Verify against onnxruntime. The table
of every pair goes to `bench/ONNX_MODELS.md`. Targets: the product lowers every pair plain
torch-mlir lowers; every culprit names its node; every pair the product lowers matches
onnxruntime (a mismatch would be a wrong lowering, or onnxruntime and the IR disagreeing on
an undefined case: each is listed).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.report import FigureResult, Metric

NUMBER = 17
NAME = "onnx_models"
TITLE = "ONNX models: the onnx wheel's test data, product vs plain torch-mlir"
IN_SMOKE = False
TIMEOUT_S = 3600.0
SWEEP_DEADLINE_S = TIMEOUT_S - 240  # the sweep is stopped here: its rows are still summarised
TABLE = Path(__file__).resolve().parents[1] / "ONNX_MODELS.md"
BACKENDS = ("linalg", "tosa", "stablehlo")


async def run(ctx: Context) -> FigureResult:
    """The sweep in its own process, then the summary."""
    result = FigureResult(NUMBER, TITLE)
    rows_path = ctx.work / "onnx_rows.jsonl"
    ctx.work.mkdir(parents=True, exist_ok=True)
    with open(ctx.log_path("fig17-onnx"), "w") as log:  # the benchmark's own log
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.onnx_sweep", str(rows_path), stdout=log, stderr=log)
        try:
            await asyncio.wait_for(proc.wait(), SWEEP_DEADLINE_S)
        except TimeoutError:  # the big light/ models (VGG-19's Verify) can take the hour
            proc.kill()
            await proc.wait()
    rows = [json.loads(line) for line in rows_path.read_text().splitlines() if line.strip()]
    summarize(result, rows)
    TABLE.write_text(table(rows))
    reached = {r["model"] for r in rows}
    result.details["per model"] = f"{TABLE.name} ({len(reached)} models)"
    missed = [m for m in model_names() if m not in reached]
    if missed:
        result.details["not reached in the time"] = ", ".join(missed)
    return result


def model_names() -> list[str]:
    """Every model the sweep takes, as its rows name them."""
    from bench.onnx_sweep import model_name, models

    return [model_name(p) for p in models()]


def _ok(row: dict[str, Any], mode: str, key: str) -> bool:
    return bool((row.get(mode) or {}).get(key))


def summarize(result: FigureResult, rows: list[dict[str, Any]]) -> None:
    """The figure's metrics from the sweep's rows."""
    models = len({r["model"] for r in rows})
    for backend in BACKENDS:
        mine = [r for r in rows if r["backend"] == backend]
        plain = sum(bool(r.get("plain")) for r in mine)
        as_is = sum(_ok(r, "as_is", "lowered") for r in mine)
        auto = sum(_ok(r, "auto", "lowered") for r in mine)
        verified = sum(_ok(r, "auto", "verified") for r in mine)
        result.metrics.append(Metric(
            f"{backend}: lowered by plain / product / product with proven fixes (of "
            f"{models}); verified against onnxruntime", auto, "models", None,
            note=f"plain {plain}, product {as_is}, with fixes {auto}, verified {verified}"))
    worse = [f"{r['model']}@{r['backend']}" for r in rows
             if r.get("plain") and not _ok(r, "as_is", "lowered")]
    result.metrics.append(Metric("pairs plain torch-mlir lowers and the product does not",
                                 len(worse), "pairs", 0, note=", ".join(worse[:10])))
    unlocated = [r for r in rows for mode in ("as_is", "auto")
                 if (r.get(mode) or {}).get("culprits") and not _ok(r, mode, "located")]
    result.metrics.append(Metric("culprits without their node", len(unlocated), "pairs", 0))
    # The sweep runs the worker's jobs in a forked child, without the worker's crash guards: a
    # torch-mlir crash ends the child (the product itself reports such a crash at its node).
    crashes = sorted({r["model"] for r in rows if r.get("crash")})
    result.metrics.append(Metric("models whose sweep child crashed (torch-mlir aborting)",
                                 len(crashes), "models", None, note=", ".join(crashes)))
    differ = [f"{r['model']}@{r['backend']}" for r in rows
              if _ok(r, "auto", "lowered") and not _ok(r, "auto", "verified")]
    result.metrics.append(Metric("lowered pairs not matching onnxruntime (or not run)",
                                 len(differ), "pairs", None, note=", ".join(differ[:12])))


def table(rows: list[dict[str, Any]]) -> str:
    """Every model and backend: plain, product, with fixes (which), Verify."""
    lines = ["# ONNX models: the onnx wheel's test data (benchmark figure 17)", "",
             "| model | backend | plain | product | with proven fixes | Verify |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        auto = r.get("auto") or {}
        fixes = ", ".join(auto.get("fixes") or []) or "-"
        verify = "✓" if auto.get("verified") else (auto.get("verify") or "-")
        product = "✓" if _ok(r, "as_is", "lowered") else \
            f"✗ {(r.get('as_is') or {}).get('culprits', 0)} nodes"
        lines.append(f"| {r['model']} | {r['backend']} | {'✓' if r.get('plain') else '✗'} | "
                     f"{product} | {'✓' if auto.get('lowered') else '✗'} ({fixes}) | "
                     f"{str(verify).replace('|', '/')} |")
    return "\n".join(lines) + "\n"

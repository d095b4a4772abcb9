"""Figure 18: the IREE targets over the product's corpora.

Linalg → IREE CPU → Verify, the GPU targets compiled without a GPU, the compiled module's time
against eager's, IREE's compile time against the lowering's. `bench/iree_sweep.py` (in a
process of its own, each module in a forked child) takes the `examples/` models, every
architecture of the zoo (`tests/models/hf_zoo.py`) and a sample of the broad sweep
(`tests/models/broad_zoo.py`: every Nth architecture the product lowered to Linalg in its last
run), and lowers each to Linalg and to the four IREE targets through the worker's job handlers;
where IREE CPU compiled it, Verify on IREE's runtime against eager, which also times both on
the same inputs (one thread each, the default: a barrier of several threads on a machine shared
with other work loses whole time slices, which says nothing of either side). Every row goes to
`bench/IREE_TARGETS.md`. Targets: every module that lowers to Linalg compiles for IREE CPU and
verifies; every IREE error has its line.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.context import Context
from bench.report import FigureResult, Metric

NUMBER = 18
NAME = "iree_targets"
TITLE = "IREE targets: Linalg → IREE CPU → Verify, GPU compile-only, compiled vs eager time"
IN_SMOKE = False
TIMEOUT_S = 5400.0
TABLE = Path(__file__).resolve().parents[1] / "IREE_TARGETS.md"
IREE = ("iree-cpu", "iree-cuda", "iree-rocm", "iree-vulkan")
CORPORA = ("examples", "zoo", "broad")


async def run(ctx: Context) -> FigureResult:
    """The sweep in its own process, then the summary."""
    result = FigureResult(NUMBER, TITLE)
    rows_path = ctx.work / "iree_rows.jsonl"
    ctx.work.mkdir(parents=True, exist_ok=True)
    with open(ctx.log_path("fig18-iree"), "w") as log:  # the benchmark's own log
        args = ["--broad", "4"] if ctx.config.quick else []
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.iree_sweep", str(rows_path), *args, stdout=log,
            stderr=log)
        await proc.wait()
    rows = [json.loads(line) for line in rows_path.read_text().splitlines() if line.strip()]
    summarize(result, rows)
    TABLE.write_text(table(rows))
    result.details["per module"] = f"{TABLE.name} ({len(rows)} modules)"
    return result


def _compiled(row: dict[str, Any], target: str) -> bool:
    return bool((row.get(target) or {}).get("compiled"))


def _verified(row: dict[str, Any]) -> bool:
    return bool((row.get("verify") or {}).get("ok"))


def _spread(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return float("nan"), float("nan"), float("nan")
    return statistics.median(values), min(values), max(values)


def summarize(result: FigureResult, rows: list[dict[str, Any]]) -> None:
    """The figure's metrics from the sweep's rows."""
    for corpus in CORPORA:
        mine = [r for r in rows if r["corpus"] == corpus]
        if not mine:
            continue
        linalg = [r for r in mine if r.get("linalg")]
        cpu = [r for r in linalg if _compiled(r, "iree-cpu")]
        verified = [r for r in cpu if _verified(r)]
        gpus = ", ".join(f"{t.removeprefix('iree-')} {sum(_compiled(r, t) for r in linalg)}"
                         for t in IREE[1:])
        result.metrics.append(Metric(
            f"{corpus}: of {len(mine)} modules, lower to Linalg → compile for IREE CPU → "
            f"verify on IREE's runtime", len(verified), "modules", None,
            note=f"{len(linalg)} → {len(cpu)} → {len(verified)}; GPU compiles (no GPU): "
                 f"{gpus}"))
    linalg = [r for r in rows if r.get("linalg")]
    missed = [r["name"] for r in linalg if not (_compiled(r, "iree-cpu") and _verified(r))]
    result.metrics.append(Metric("modules lowering to Linalg that IREE CPU does not compile "
                                 "or that do not match eager", len(missed), "modules", 0,
                                 note=", ".join(missed[:12])))
    unlocated = [f"{r['name']}@{t}" for r in linalg for t in IREE
                 if (r.get(t) or {}).get("error") and not (r.get(t) or {}).get("located")]
    result.metrics.append(Metric("IREE errors without a line", len(unlocated), "errors", 0,
                                 note=", ".join(unlocated[:12])))
    speeds = [r["verify"]["speed"] for r in rows if _verified(r) and r["verify"].get("speed")]
    ratios = [s["compiled_ms"] / s["eager_ms"] for s in speeds if s.get("eager_ms")]
    med, lo, hi = _spread(ratios)
    threads = sorted({s.get("threads") for s in speeds})
    result.metrics.append(Metric(
        "compiled (IREE CPU) / eager time per call, median over verified modules", med, "×",
        None, samples=ratios, lo=lo, hi=hi,
        note=f"{len(ratios)} modules, {sum(x < 1 for x in ratios)} faster compiled; "
             f"{'/'.join(str(t) for t in threads)} thread(s)"))
    compile_ratio = [r["iree-cpu"]["compile_s"] / r["lowering_s"] for r in linalg
                     if _compiled(r, "iree-cpu") and r.get("lowering_s")]
    med, lo, hi = _spread(compile_ratio)
    cpu_s = [r["iree-cpu"]["compile_s"] for r in linalg if _compiled(r, "iree-cpu")]
    lower_s = [r["lowering_s"] for r in linalg if r.get("lowering_s")]
    result.metrics.append(Metric(
        "IREE CPU compile time / the product's lowering (export to Linalg), median", med, "×",
        None, samples=compile_ratio, lo=lo, hi=hi,
        note=f"compile median {_spread(cpu_s)[0]:.2f} s, lowering median "
             f"{_spread(lower_s)[0]:.2f} s"))
    crashes = [r["name"] for r in rows if r.get("crash") or r.get("error")]
    result.metrics.append(Metric("modules whose sweep crashed or could not run", len(crashes),
                                 "modules", 0, note=", ".join(crashes[:12])))


def _cell(row: dict[str, Any], target: str) -> str:
    cell = row.get(target) or {}
    if cell.get("compiled"):
        return f"✓ {cell.get('compile_s', 0):.1f} s, {cell.get('dispatches', 0)} dispatches"
    error = str(cell.get("error") or "").replace("|", "/")
    return f"✗ {error[:90]}" if error else "·"


def table(rows: list[dict[str, Any]]) -> str:
    """Every module: Linalg, each IREE target, Verify, time per call."""
    lines = ["# IREE targets over the product's corpora (benchmark figure 18)", "",
             "`python -m bench.run --only 18` (or `python -m bench.iree_sweep OUT.jsonl`). "
             "Linalg: the product's lowering (seconds from export to Linalg); each IREE "
             "target: compiled by IREE 3.13 (seconds, dispatch regions) or its first error; "
             "the GPU targets compile on a machine without a GPU, not run; Verify: IREE CPU "
             "on IREE's runtime against eager; time: per call, IREE CPU / eager, one thread "
             "each.", "",
             "| corpus | module | Linalg | IREE CPU | IREE CUDA | IREE ROCm | IREE Vulkan | "
             "Verify (IREE CPU) | time per call |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("crash") or r.get("error"):
            lines.append(f"| {r['corpus']} | {r['name']} | ✗ {r.get('error', 'crashed')} "
                         "| | | | | | |")
            continue
        verify = r.get("verify") or {}
        speed = verify.get("speed") or {}
        time_cell = (f"{speed['compiled_ms']:.3g} / {speed['eager_ms']:.3g} ms"
                     if speed.get("eager_ms") else "")
        linalg = f"✓ {r.get('lowering_s', 0):.1f} s" if r.get("linalg") else "✗"
        message = str(verify.get("message", "")).replace("|", "/")[:60]
        lines.append(f"| {r['corpus']} | {r['name']} | {linalg} | "
                     + " | ".join(_cell(r, t) for t in IREE)
                     + f" | {message} | {time_cell} |")
    return "\n".join(lines) + "\n"

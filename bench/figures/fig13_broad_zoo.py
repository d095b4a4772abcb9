"""Figure 13: every architecture `transformers` can build from a config, plus diffusers' UNet
and VAE, through torch.export, plain torch-mlir and the product.

The corpus is `tests/models/broad_zoo.py`: each model type with a base model, its default config
shrunk (widths, layers, heads, experts, vocabulary, image and audio sizes), its input made from
the model's main input name, wrapped in a user's module (`ZooModel`) that returns the output's
first tensor; `diffusers` 0.42.1's `UNet2DConditionModel` and `AutoencoderKL`, tiny. For each
architecture (`bench/broad_sweep.py`): `torch.export.export` and plain
`fx.export_and_import(..., output_type=...)` per backend in a warm plain process, and the product
through the Engine (one check of linalg, tosa and stablehlo, as the editor runs it). Recorded per
architecture and backend: which lowered, the product's culprits (op and line) and its worker
crashes; then each culprit op lowered alone with its types (`worker.culprit_precision`):
one that lowers alone is a false culprit. The table of every architecture goes to
`bench/BROAD_ZOO.md`. Targets: no job answered "the worker crashed"; the product lowers every
architecture plain torch-mlir lowers, on each backend; no culprit lowers alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.broad_sweep import BACKENDS, Row, architectures, sweep
from bench.context import Context
from bench.report import FigureResult, Metric

NUMBER = 13
NAME = "broad_zoo"
TITLE = "every transformers architecture (+ diffusers)"
IN_SMOKE = False  # ~55 min on 2 cores: `--only 13`, or `python -m bench.broad_sweep`
TIMEOUT_S = 12 * 3600.0
QUICK_TYPES = ("llama", "bert", "phimoe", "mixtral", "swin", "groupvit", "whisper", "vit",
               "diffusers-unet2d-condition", "diffusers-autoencoder-kl")
TABLE = Path(__file__).resolve().parents[1] / "BROAD_ZOO.md"

async def run(ctx: Context) -> FigureResult:
    """The sweep (every architecture; --quick: a representative ten), then the summary."""
    result = FigureResult(NUMBER, TITLE)
    types = list(QUICK_TYPES) if ctx.config.quick else architectures(ctx.config.python)
    rows = await sweep(types, ctx.work / "broad_rows.jsonl", python=ctx.config.python,
                       log=ctx.log_path("baseline-fig13"))
    summarize(result, rows)
    TABLE.write_text(table(rows))
    result.details["per architecture"] = f"{TABLE.name} ({len(rows)} architectures)"
    return result


def summarize(result: FigureResult, rows: list[Row]) -> None:
    """Counts per backend and the targets' metrics."""
    built = [r for r in rows if r.built]
    exported = [r for r in built if r.exported]
    result.metrics.append(Metric("architectures", float(len(rows)), "count", None))
    result.metrics.append(Metric("built tiny and run eagerly", float(len(built)), "count",
                                 None))
    result.metrics.append(Metric("exported by torch.export", float(len(exported)), "count",
                                 None))
    behind: list[str] = []
    for backend in BACKENDS:
        plain = [r for r in built if r.plain.get(backend, {}).get("ok")]
        product = [r for r in built if r.product.get(backend, {}).get("ok")]
        behind += [f"{r.type} → {backend}" for r in plain
                   if not r.product.get(backend, {}).get("ok")]
        result.metrics.append(Metric(f"{backend}: lowered by torch-mlir", float(len(plain)),
                                     "count", None))
        result.metrics.append(Metric(f"{backend}: lowered by the product", float(len(product)),
                                     "count", None))
    crashes = [r.type for r in rows if r.worker_crashes]
    result.metrics.append(Metric("answered \"the worker crashed\"",
                                 float(sum(r.worker_crashes for r in rows)), "count", 0.0, "<=",
                                 note=", ".join(crashes)))
    lost = [r.type for r in rows if r.worker_restarts]
    result.metrics.append(Metric("workers lost (answered on the next)",
                                 float(sum(r.worker_restarts for r in rows)), "count", None,
                                 note=", ".join(lost)))
    result.metrics.append(Metric("architecture × backend lowered by torch-mlir, not by the "
                                 "product", float(len(behind)), "count", 0.0, "<=",
                                 note=", ".join(behind)))
    checks = [(r.type, b, c) for r in built for b, cs in r.precision.items() for c in cs]
    false = [f"{t} → {b}: {c['op']} (line {c['line']})" for t, b, c in checks
             if c.get("lowers_alone")]
    unchecked = [r.type for r in built if r.precision_error]
    result.metrics.append(Metric("culprits that lower alone", float(len(false)), "count", 0.0,
                                 "<=", note=f"of {len(checks)} checked; " + ", ".join(false)
                                 + (f"; no answer for {', '.join(unchecked)}" if unchecked
                                    else "")))


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "·"
    return "✓" if entry.get("ok") else "✗"


def _culprits(row: Row, backend: str) -> str:
    entry = row.product.get(backend) or {}
    if entry.get("ok") or not entry:
        return ""
    ops = []
    for c in entry.get("culprits", []):
        op = str(c.get("op") or "").removeprefix("torch.") or "(no op)"
        if op not in ops:
            ops.append(op)
    return ", ".join(f"`{op}`" for op in ops[:4]) + (" …" if len(ops) > 4 else "")


def _md(text: str) -> str:
    """A table cell: one short line, no pipes."""
    return text[:90].replace("|", "\\|").replace("`", "'")


def table(rows: list[Row]) -> str:
    """BROAD_ZOO.md: one row per architecture."""
    head = ["# Broad real-model sweep (figure 13)", "",
            "Every architecture of `tests/models/broad_zoo.py` (`python -m bench.run --only 13`"
            " or `python -m bench.broad_sweep`). Columns: built (tiny config, eager run), "
            "torch.export, then per backend plain torch-mlir (`fx.export_and_import`) / the "
            "product, ✓ lowered, ✗ not, · not tried; the product's culprits where it did not "
            "lower; `lowers alone`: those of its culprit ops that lower when alone (false "
            "culprits; 0: every one checked fails alone).", "",
            "| architecture | built | export | linalg | tosa | stablehlo | culprits (linalg; "
            "tosa; stablehlo) | lowers alone | note |",
            "|---|---|---|---|---|---|---|---|---|"]
    body = []
    for r in sorted(rows, key=lambda r: r.type):
        if not r.built:
            body.append(f"| {r.type} | ✗ | · | · | · | · | | | {_md(r.why_not_built)} |")
            continue
        cells = [f"{_cell(r.plain.get(b))} / {_cell(r.product.get(b))}" for b in BACKENDS]
        culprits = "; ".join(_culprits(r, b) or "–" for b in BACKENDS)
        checks = [c for b in BACKENDS for c in r.precision.get(b, [])]
        alone = (", ".join(f"`{str(c['op']).removeprefix('torch.')}`" for c in checks
                           if c.get("lowers_alone")) or "0") if checks else ""
        note = _md(r.export_error) if not r.exported else "; ".join(
            n for n in (f"{r.worker_crashes} worker crash(es)" if r.worker_crashes else "",
                        f"{r.worker_restarts} worker(s) lost" if r.worker_restarts else "",
                        f"precision check: {_md(r.precision_error)}" if r.precision_error
                        else "")
            if n)
        body.append(f"| {r.type} | ✓ | {'✓' if r.exported else '✗'} | {' | '.join(cells)} | "
                    f"{culprits} | {alone} | {note} |")
    return "\n".join([*head, *body]) + "\n"

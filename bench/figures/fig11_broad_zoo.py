"""Figure 11: every architecture `transformers` can build from a config, plus diffusers' UNet
and VAE, through torch.export, plain torch-mlir and the product.

The corpus is `tests/models/broad_zoo.py`: each model type with a base model, its default config
shrunk (widths, layers, heads, experts, vocabulary, image and audio sizes), its input made from
the model's main input name, wrapped in a user's module (`ZooModel`) that returns the output's
first tensor; `diffusers` 0.42.1's `UNet2DConditionModel` and `AutoencoderKL`, tiny. For each
architecture (`bench/broad_sweep.py`): `torch.export.export` and plain
`fx.export_and_import(..., output_type=...)` per backend in a warm plain process, and the product
through the Engine (one check of linalg, tosa and stablehlo, as the editor runs it). Recorded per
architecture and backend: which lowered, the product's culprits (op and line) and its worker
crashes. The table of every architecture goes to `bench/BROAD_ZOO.md`. Targets: no worker crash;
the product lowers every architecture plain torch-mlir lowers, on each backend. Precision of the
culprits (does a culprit fail to lower when alone?) is a column left to fill: `lowers_alone`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.broad_sweep import BACKENDS, Row, architectures, sweep
from bench.context import Context
from bench.report import FigureResult, Metric

NUMBER = 11
NAME = "broad_zoo"
TITLE = "every transformers architecture (+ diffusers)"
IN_SMOKE = False  # hours on 2 cores: `--only 11`, or `python -m bench.broad_sweep`
TIMEOUT_S = 12 * 3600.0
QUICK_TYPES = ("llama", "bert", "phimoe", "mixtral", "swin", "groupvit", "whisper", "vit",
               "diffusers-unet2d-condition", "diffusers-autoencoder-kl")
TABLE = Path(__file__).resolve().parents[1] / "BROAD_ZOO.md"

def lowers_alone(culprit: dict[str, Any], backend: str) -> bool | None:
    """Whether a culprit of the product (a row of `Row.product[backend]["culprits"]`) lowers
    to `backend` when alone: the precision column. None (not measured) until the isolation
    check of culprits records its verdict in the sweep's rows (`culprit["lowers_alone"]`)."""
    verdict = culprit.get("lowers_alone")
    return None if verdict is None else bool(verdict)


async def run(ctx: Context) -> FigureResult:
    """The sweep (every architecture; --quick: a representative ten), then the summary."""
    result = FigureResult(NUMBER, TITLE)
    types = list(QUICK_TYPES) if ctx.config.quick else architectures(ctx.config.python)
    rows = await sweep(types, ctx.work / "broad_rows.jsonl", python=ctx.config.python,
                       log=ctx.log_path("baseline-fig11"))
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
    verdicts = [lowers_alone(c, b) for r in built for b, p in r.product.items()
                for c in p.get("culprits", [])]
    known = [v for v in verdicts if v is not None]
    result.metrics.append(Metric(
        "culprits that lower alone", float(sum(known)) if known else float("nan"), "count",
        None, note=f"{len(known)} of {len(verdicts)} culprits checked"))


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
    head = ["# Broad real-model sweep (figure 11)", "",
            "Every architecture of `tests/models/broad_zoo.py` (`python -m bench.run --only 11`"
            " or `python -m bench.broad_sweep`). Columns: built (tiny config, eager run), "
            "torch.export, then per backend plain torch-mlir (`fx.export_and_import`) / the "
            "product, ✓ lowered, ✗ not, · not tried; the product's culprits where it did not "
            "lower; `lowers alone`: culprits that lower when alone (— until measured).", "",
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
        verdicts = [lowers_alone(c, b) for b in BACKENDS
                    for c in (r.product.get(b) or {}).get("culprits", [])]
        alone = "—" if all(v is None for v in verdicts) else str(sum(bool(v) for v in verdicts))
        note = _md(r.export_error) if not r.exported else "; ".join(
            n for n in (f"{r.worker_crashes} worker crash(es)" if r.worker_crashes else "",
                        f"{r.worker_restarts} worker(s) lost" if r.worker_restarts else "")
            if n)
        body.append(f"| {r.type} | ✓ | {'✓' if r.exported else '✗'} | {' | '.join(cells)} | "
                    f"{culprits} | {alone} | {note} |")
    return "\n".join([*head, *body]) + "\n"

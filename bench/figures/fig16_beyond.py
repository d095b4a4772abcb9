"""Figure 16: eight libraries beyond transformers, the product against plain torch-mlir.

The corpus is `tests/models/beyond_zoo.py`: real classes of `torch_geometric` (GCN, GAT,
GraphSAGE, GIN), `e3nn` (a tensor product, an equivariant linear map), `torchdiffeq` (RK4 and
dopri5 solves), `mambapy` (Mamba), `rtdl_revisiting_models` (MLP, ResNet, FT-Transformer),
`tab_transformer_pytorch` (TabTransformer), `vector_quantize_pytorch` (a vector quantizer,
FSQ) and `asteroid_filterbanks` (an STFT encoder, a sinc filterbank), tiny configs, random
weights, each wrapped in a user's module (`BeyondModel`). The libraries come with the `bench`
extra (`pip install -e .[bench]`, torch pinned). For each model the sweep of figure 13
(`bench/broad_sweep.py`): `torch.export.export` and plain `fx.export_and_import` per backend in
a warm plain process, the product through the Engine; then, where the product named culprits,
each culprit op lowered alone (a false culprit lowers), and every other op of the module lowered
alone (a missed culprit fails alone and is named by no diagnostic), with the product's own
isolation. Export failures are counted with and without a library line in their related
information; where the product offers a proven way past a refusal (a pin), the module is
lowered again with `--rewrites auto`. The table of every model goes to `bench/BEYOND_ZOO.md`.
Targets: the product lowers every model plain torch-mlir lowers, on each backend; no worker
crash; no false and no missed culprit; every export failure raised in library code names its
library line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.broad_sweep import BACKENDS, REPO, Corpus, Row, architectures, sweep
from bench.context import Context
from bench.report import FigureResult, Metric

NUMBER = 16
NAME = "beyond_zoo"
TITLE = "beyond transformers: eight libraries of other fields"
IN_SMOKE = False
TIMEOUT_S = 3 * 3600.0
QUICK_TYPES = ("gcn", "e3nn_tensor_product", "ode_rk4", "mamba", "rtdl_ft_transformer",
               "tab_transformer", "vector_quantize", "stft_encoder")
BEYOND = Corpus(REPO / "tests" / "models" / "beyond_zoo.py", "BeyondModel", "beyond_inputs")
TABLE = Path(__file__).resolve().parents[1] / "BEYOND_ZOO.md"


async def run(ctx: Context) -> FigureResult:
    """The sweep (every model; --quick: one per library), then the summary."""
    result = FigureResult(NUMBER, TITLE)
    types = list(QUICK_TYPES) if ctx.config.quick else architectures(ctx.config.python,
                                                                      BEYOND)
    rows = await sweep(types, ctx.work / "beyond_rows.jsonl", python=ctx.config.python,
                       log=ctx.log_path("baseline-fig16"), corpus=BEYOND)
    summarize(result, rows)
    TABLE.write_text(table(rows))
    result.details["per model"] = f"{TABLE.name} ({len(rows)} models)"
    return result


def _export_failures(rows: list[Row]) -> tuple[list[Row], list[Row]]:
    """(models the product could not export, those among them with a library line)."""
    failed = [r for r in rows if r.built and any(
        c.get("kind") == "export-error" for p in r.product.values()
        for c in p.get("culprits", []))]
    user = str(BEYOND.path)
    with_line = [r for r in failed if any(
        not str(rel).startswith(user) for p in r.product.values()
        for c in p.get("culprits", []) if c.get("kind") == "export-error"
        for rel in c.get("related", []))]
    return failed, with_line


def summarize(result: FigureResult, rows: list[Row]) -> None:
    """Counts per backend and the targets' metrics."""
    built = [r for r in rows if r.built]
    exported = [r for r in built if r.exported]
    result.metrics.append(Metric("models", float(len(rows)), "count", None))
    result.metrics.append(Metric("built and run eagerly", float(len(built)), "count", None))
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
    result.metrics.append(Metric("model × backend lowered by torch-mlir, not by the product",
                                 float(len(behind)), "count", 0.0, "<=",
                                 note=", ".join(behind)))
    crashes = [r.type for r in rows if r.worker_crashes]
    result.metrics.append(Metric("answered \"the worker crashed\"",
                                 float(sum(r.worker_crashes for r in rows)), "count", 0.0, "<=",
                                 note=", ".join(crashes)))
    checks = [(r.type, b, c) for r in built for b, cs in r.precision.items() for c in cs]
    false = [f"{t} → {b}: {c['op']} (line {c['line']})" for t, b, c in checks
             if c.get("named", True) and c.get("lowers_alone")]
    missed = [f"{t} → {b}: {c['op']} (line {c['line']})" for t, b, c in checks
              if not c.get("named", True)]
    named = [c for _t, _b, c in checks if c.get("named", True)]
    unchecked = [r.type for r in built if r.precision_error and r.exported]
    result.metrics.append(Metric("culprits that lower alone (false)", float(len(false)),
                                 "count", 0.0, "<=",
                                 note=f"of {len(named)} checked; " + ", ".join(false)
                                 + (f"; no answer for {', '.join(unchecked)}" if unchecked
                                    else "")))
    result.metrics.append(Metric("ops failing alone that no culprit names (missed)",
                                 float(len(missed)), "count", 0.0, "<=",
                                 note=", ".join(missed)))
    culprits = [c for r in built for p in r.product.values() for c in p.get("culprits", [])
                if c.get("kind") == "unsupported-op"]
    result.metrics.append(Metric("culprits without a reason (why)",
                                 float(sum(1 for c in culprits if not c.get("reason"))),
                                 "count", None, note=f"of {len(culprits)}"))
    failed, with_line = _export_failures(rows)
    result.metrics.append(Metric("export failures with their library line",
                                 float(len(with_line)), "count", float(len(failed)), ">=",
                                 note=f"of {len(failed)}: "
                                 + ", ".join(r.type for r in failed)))
    past = [r for r in failed if r.rewrites.get("export", {}).get("lowered")]
    result.metrics.append(Metric("export failures past with a proven fix (lower after it)",
                                 float(len(past)), "count", None,
                                 note=f"of {len(failed)}: " + ", ".join(
                                     f"{r.type} ({', '.join(r.rewrites['export']['rewrites'])}"
                                     f" → {', '.join(r.rewrites['export']['lowered'])})"
                                     for r in past)))


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "·"
    return "✓" if entry.get("ok") else "✗"


def _culprits(row: Row, backend: str) -> str:
    entry = row.product.get(backend) or {}
    if entry.get("ok") or not entry:
        return ""
    ops: list[str] = []
    for c in entry.get("culprits", []):
        for op in c.get("ops") or [c.get("op")]:
            name = str(op or "").removeprefix("torch.") or "(no op)"
            if name not in ops:
                ops.append(name)
    return ", ".join(f"`{op}`" for op in ops[:4]) + (" …" if len(ops) > 4 else "")


def _md(text: str) -> str:
    return text[:110].replace("|", "\\|").replace("`", "'").replace("\n", " ")


def table(rows: list[Row]) -> str:
    """BEYOND_ZOO.md: one row per model."""
    head = ["# Beyond transformers (figure 16)", "",
            "Every model of `tests/models/beyond_zoo.py` (`python -m bench.run --only 16`). "
            "Columns: built (eager run), torch.export, then per backend plain torch-mlir / the "
            "product (✓ lowered, ✗ not, · not tried); the product's culprit ops where it did "
            "not lower; false: culprit ops that lower alone; missed: ops that fail alone and "
            "no culprit names; note: the product's export error (its first line).", "",
            "| model | built | export | linalg | tosa | stablehlo | culprits (linalg; tosa; "
            "stablehlo) | false | missed | note |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    body = []
    for r in rows:
        if not r.built:
            body.append(f"| {r.type} | ✗ | · | · | · | · | | | | {_md(r.why_not_built)} |")
            continue
        cells = [f"{_cell(r.plain.get(b))} / {_cell(r.product.get(b))}" for b in BACKENDS]
        culprits = "; ".join(_culprits(r, b) or "–" for b in BACKENDS)
        checks = [c for b in BACKENDS for c in r.precision.get(b, [])]
        false = sum(1 for c in checks if c.get("named", True) and c.get("lowers_alone"))
        missed = ", ".join(f"`{str(c['op']).removeprefix('torch.')}`" for c in checks
                           if not c.get("named", True))
        export = next((c.get("cause") or "" for p in r.product.values()
                       for c in p.get("culprits", []) if c.get("kind") == "export-error"), "")
        note = _md(export) if export else ""
        past = r.rewrites.get("export", {})
        if past.get("lowered"):
            note += (f"; past it with {', '.join(past['rewrites'])}: lowers on "
                     f"{', '.join(past['lowered'])}")
        body.append(f"| {r.type} | ✓ | {'✓' if r.exported else '✗'} | {' | '.join(cells)} | "
                    f"{culprits} | {false if checks else ''} | {missed or ('0' if checks else '')}"
                    f" | {note} |")
    return "\n".join([*head, *body]) + "\n"

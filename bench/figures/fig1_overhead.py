"""Figure 1: overhead of the product's first lowering over plain torch-mlir.

The product: `torchMlirLens/lower` to linalg through a warm server (real LSP client); before
each run the document text changes by a comment, so the result cache and the exported-program
cache both miss. The baseline: `export_and_import(..., output_type="linalg-on-tensors")` in a
warm separate process, same module and inputs. Runs interleaved (order alternating), one
untimed warm-up each per model. Target: median ratio ≤ 1.10 for every model.
"""

from __future__ import annotations

from bench.baseline import BaselineProcess
from bench.context import Context, bump, check_lower
from bench.models import BenchModel, all_models, example
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import median, ratio_samples, spread

NUMBER = 1
NAME = "overhead"
TITLE = "Overhead over torch-mlir"
TARGET = 1.10


def models(ctx: Context) -> list[BenchModel]:
    """All four models; the MLP alone in a smoke run."""
    return [example("mlp", ctx.work)] if ctx.config.smoke else all_models(ctx.work)


async def run(ctx: Context) -> FigureResult:
    """Measure each model's product/baseline ratio."""
    result = FigureResult(NUMBER, TITLE)
    client = await ctx.warm_server()
    base = BaselineProcess(ctx.config.python, ctx.log_path("baseline-fig1"))
    await base.start()
    try:
        for model in models(ctx):
            original = model.path.read_text()
            uri = client.open(model.path, original)
            product: list[float] = []
            baseline: list[float] = []
            phases: dict[str, list[float]] = {}
            for k in range(-1, ctx.config.fig1_repeats):  # k = -1: warm-up, untimed
                client.change(uri, bump(original, k))
                if k % 2 == 0:
                    b = await base.lower(model)
                    res, t = await client.lower(uri, model.module, "linalg")
                else:
                    res, t = await client.lower(uri, model.module, "linalg")
                    b = await base.lower(model)
                check_lower(res, f"{model.name} lower")
                if k >= 0:
                    product.append(t)
                    baseline.append(b["seconds"])
                    for phase, sec in (res.get("timings") or {}).items():
                        if isinstance(sec, int | float):
                            phases.setdefault(phase, []).append(float(sec))
            client.close(uri)
            ratio = median(product) / median(baseline)
            lo, hi = spread(ratio_samples(product, baseline))
            result.metrics.append(Metric(
                f"{model.name}: product / torch-mlir", ratio, "x", TARGET, "<=",
                ratio_samples(product, baseline), lo, hi,
            ))
            result.metrics.append(metric_from_samples(f"{model.name}: product", product, "s", None))
            result.metrics.append(
                metric_from_samples(f"{model.name}: torch-mlir", baseline, "s", None)
            )
            result.details[f"{model.name} worker phases (median s)"] = {
                p: round(median(v), 4) for p, v in phases.items()
            }
    finally:
        await base.stop()
    return result


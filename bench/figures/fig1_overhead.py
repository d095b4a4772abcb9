"""Figure 1: overhead of the product's first lowering over plain torch-mlir.

The product: `torchMlirLens/lower` to linalg through a warm server (real LSP client), with the
default settings (headline: a lowering is the check shared with hover and diagnostics, so it
also lowers the diagnosed backends from the same export) and, for the small models, with
diagnostics off (linalg only, for the diagnosis). Before each timed run the document text
changes by a comment, so the result cache and the exported-program cache both miss. The
baseline: `export_and_import(..., output_type="linalg-on-tensors")` in a warm separate process,
same module and inputs. Runs interleaved (order rotating; 5 per side for the LM, 25 for the
small models, whose ratios are the noisiest), one untimed warm-up each per model
(with the opened text, so it joins the check that opening the file started).
Target: median(product, default settings) / median(torch-mlir) ≤ 1.10 for every model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bench.baseline import BaselineProcess
from bench.context import Context, bump, check_lower, restarts_of
from bench.lsp_client import LensClient
from bench.models import BenchModel, all_models, example
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import median, ratio_samples, spread

NUMBER = 1
NAME = "overhead"
TITLE = "Overhead over torch-mlir"
TARGET = 1.10
# Models also timed with diagnostics off (linalg only), to tell the extra backends' share from
# the rest of the overhead; not the 20-layer LM, whose runs dominate the benchmark's time.
DIAGNOSIS_MODELS = {"mlp", "cnn", "block"}


def models(ctx: Context) -> list[BenchModel]:
    """All four models (or those named by --models); the MLP alone in a smoke run."""
    if ctx.config.smoke:
        return [example("mlp", ctx.work)]
    chosen = all_models(ctx.work)
    if ctx.config.models:
        chosen = [m for m in chosen if m.name in ctx.config.models]
    return chosen


def _product(client: LensClient, uri: str, model: BenchModel, original: str,
             phases: dict[str, list[float]]) -> Callable[[int], Awaitable[float]]:
    async def one(k: int) -> float:
        if k >= 0:  # the warm-up keeps the opened text: it joins the check opening started
            client.change(uri, bump(original, k))
        res, t = await client.lower(uri, model.module, "linalg")
        check_lower(res, f"{model.name} lower")
        # The server may go on with the other check targets after answering: let it finish
        # (untimed) so it neither slows the next measurement nor steals the baseline's CPU.
        idle = await client.wait_idle()
        if k >= 0:
            phases.setdefault("follow-up after the answer (untimed)", []).append(idle)
        timings = {p: float(v) for p, v in (res.get("timings") or {}).items()
                   if isinstance(v, int | float)}
        if timings and k >= 0:
            for phase, sec in timings.items():
                phases.setdefault(phase, []).append(sec)
            # load + inputs + export build the program, "total" is the lowering call after it;
            # the rest of t is the round trip (LSP, engine, pipes, JSON) and untimed work.
            outside = t - sum(timings.get(p, 0.0) for p in ("load", "inputs", "export", "total"))
            phases.setdefault("outside the timed phases", []).append(outside)
        return t

    return one


async def run(ctx: Context) -> FigureResult:
    """Measure each model's product/baseline ratio."""
    result = FigureResult(NUMBER, TITLE)
    default = await ctx.warm_server()
    # A smoke run skips the diagnostics-off variant (one worker fewer to start).
    quiet = None if ctx.config.smoke else await ctx.warm_server(quiet=True)
    servers = [c for c in (default, quiet) if c is not None]
    restarts_before = [await restarts_of(c) for c in servers]
    base = BaselineProcess(ctx.config.python, ctx.log_path("baseline-fig1"))
    await base.start()
    try:
        for model in models(ctx):
            original = model.path.read_text()
            phases: dict[str, list[float]] = {}
            sides: dict[str, Callable[[int], Awaitable[float]]] = {}
            clients = [("product", default)]
            if quiet is not None and model.name in DIAGNOSIS_MODELS:
                clients.append(("product, diagnostics off", quiet))
            for name, client in clients:
                uri = client.open(model.path, original)
                sides[name] = _product(client, uri, model, original,
                                       phases if name == "product" else {})

            async def baseline(k: int, model: BenchModel = model) -> float:
                return float((await base.lower(model))["seconds"])

            sides["torch-mlir"] = baseline
            times: dict[str, list[float]] = {name: [] for name in sides}
            names = list(sides)
            repeats = (ctx.config.fig1_repeats if model.name == "lm20"
                       else ctx.config.fig1_small_repeats)
            for k in range(-1, repeats):  # k = -1: warm-up, untimed
                shift = max(k, 0) % len(names)
                for name in names[shift:] + names[:shift]:
                    t = await sides[name](k)
                    if k >= 0:
                        times[name].append(t)
            for _, client in clients:
                client.close(client.open_uri(model.path))

            prod, plain = times["product"], times["torch-mlir"]
            ratios = ratio_samples(prod, plain)
            lo, hi = spread(ratios)
            result.metrics.append(Metric(f"{model.name}: product / torch-mlir",
                                         median(prod) / median(plain), "x", TARGET, "<=",
                                         ratios, lo, hi))
            if "product, diagnostics off" in times:
                quiet_t = times["product, diagnostics off"]
                q_ratios = ratio_samples(quiet_t, plain)
                qlo, qhi = spread(q_ratios)
                result.metrics.append(Metric(f"{model.name}: diagnostics off / torch-mlir",
                                             median(quiet_t) / median(plain), "x", None, "<=",
                                             q_ratios, qlo, qhi))
            for name, xs in times.items():
                result.metrics.append(metric_from_samples(f"{model.name}: {name}", xs, "s", None))
            result.details[f"{model.name} worker phases, default settings (median s)"] = {
                p: round(median(v), 4) for p, v in phases.items()
            }
    finally:
        await base.stop()
    # A worker replaced between jobs (e.g. for a thread a library keeps) would be paid for in
    # every lowering: there must be none.
    restarts = sum([await restarts_of(c) for c in servers]) - sum(restarts_before)
    result.metrics.append(Metric("worker restarts during the figure", float(restarts), "count",
                                 0.0, "<="))
    return result

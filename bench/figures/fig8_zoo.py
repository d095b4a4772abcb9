"""Figure 8: the `transformers` model zoo, lowered by the product and by plain torch-mlir.

Fourteen architectures from `tests/models/hf_zoo.py` (decoder LLMs, encoders, vision, speech;
tiny configs, random weights, each wrapped in a user's nn.Module with an inputs comment). For
every model and backend (linalg, tosa, stablehlo), side by side: the product through a warm
server (`torchMlirLens/lower`, diagnostics off so one target is lowered; the text is changed by
a comment before each run, so every lowering exports afresh) and plain
`fx.export_and_import(..., output_type=...)` in a warm separate process. Recorded: which
lowered, why the others did not (first line), and the time of each. Targets: the product never
fails where plain torch-mlir lowers; no model fails in the product where plain torch-mlir fails
only because of a non-persistent buffer (llvm/torch-mlir#4744); no worker restart.
"""

from __future__ import annotations

from pathlib import Path

from bench.baseline import BaselineProcess
from bench.context import Context, bump, restarts_of
from bench.models import BenchModel, annotation_of
from bench.report import FigureResult, Metric
from bench.stats import median, ratio_samples, spread

NUMBER = 8
NAME = "zoo"
TITLE = "transformers model zoo"
ZOO = Path(__file__).resolve().parents[2] / "tests" / "models" / "hf_zoo.py"
MODELS = ("TinyGPT2", "TinyLlama", "TinyQwen2", "TinyMistral", "TinyPhi3", "TinyBert",
          "TinyDistilBert", "TinyRoberta", "TinyT5Encoder", "TinyViT", "TinyResNet",
          "TinyConvNext", "TinyWhisperEncoder", "TinyWav2Vec2")
SMOKE_MODELS = ("TinyGPT2", "TinyLlama")
BACKENDS = {"linalg": "linalg-on-tensors", "tosa": "tosa", "stablehlo": "stablehlo"}
NON_PERSISTENT = "Could not find state mapping for buffer"


def zoo_models(smoke: bool) -> list[BenchModel]:
    """The zoo's wrappers as benchmark models (inputs from their comments)."""
    names = SMOKE_MODELS if smoke else MODELS
    return [BenchModel(name, ZOO, name, annotation_of(ZOO, name, "inputs") or "()")
            for name in names]


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:160]


async def run(ctx: Context) -> FigureResult:
    """Lower every model to every backend on both sides; count and time."""
    result = FigureResult(NUMBER, TITLE)
    client = await ctx.warm_server(quiet=True)
    restarts_before = await restarts_of(client)
    base = BaselineProcess(ctx.config.python, ctx.log_path("baseline-fig8"))
    await base.start()
    backends = ["linalg"] if ctx.config.smoke else list(BACKENDS)
    outcomes: dict[str, dict[str, dict[str, object]]] = {}
    try:
        original = ZOO.read_text()
        uri = client.open(ZOO, original)
        for k, model in enumerate(zoo_models(ctx.config.smoke)):
            rows: dict[str, dict[str, object]] = {}
            # Untimed warm-up: the first use of a model class imports its library code.
            await client.lower(uri, model.module, "linalg")
            for j, backend in enumerate(backends):
                client.change(uri, bump(original, k * 10 + j))
                res, seconds = await client.lower(uri, model.module, backend)
                product_ok = bool(res.get("ok") and res.get("ir"))
                diags = res.get("diagnostics") or []
                try:
                    reply = await base.lower(model, BACKENDS[backend])
                    plain_ok, plain_s, plain_error = True, float(reply["seconds"]), ""
                except RuntimeError as exc:
                    plain_ok, plain_s, plain_error = False, float("nan"), str(exc)
                rows[backend] = {
                    "product_ok": product_ok, "product_s": round(seconds, 3),
                    "product_error": "" if product_ok else _first_line(
                        str(diags[0].get("message", "")) if diags else "no IR"),
                    "plain_ok": plain_ok, "plain_s": round(plain_s, 3),
                    "plain_error": _first_line(plain_error.removeprefix("baseline failed: ")),
                    "plain_non_persistent": NON_PERSISTENT in plain_error,
                }
            outcomes[model.name] = rows
        client.close(uri)
    finally:
        await base.stop()
    _summarize(result, outcomes, backends, await restarts_of(client) - restarts_before)
    return result


def _summarize(result: FigureResult, outcomes: dict[str, dict[str, dict[str, object]]],
               backends: list[str], restarts: int) -> None:
    """Per backend: fractions lowered, times; over all: the regressions the targets forbid."""
    product_only_fails = []  # plain lowers, the product does not
    buffer_fails = []  # plain fails only for a non-persistent buffer, and so does the product
    for backend in backends:
        rows = [(name, r[backend]) for name, r in outcomes.items()]
        n = len(rows)
        product = [name for name, r in rows if r["product_ok"]]
        plain = [name for name, r in rows if r["plain_ok"]]
        product_only_fails += [f"{name} → {backend}" for name, r in rows
                               if r["plain_ok"] and not r["product_ok"]]
        buffer_fails += [f"{name} → {backend}" for name, r in rows
                         if r["plain_non_persistent"] and not r["product_ok"]]
        result.metrics.append(Metric(f"{backend}: lowered by the product", len(product) / n,
                                     "fraction", None, note=f"{len(product)}/{n}"))
        result.metrics.append(Metric(f"{backend}: lowered by torch-mlir", len(plain) / n,
                                     "fraction", None, note=f"{len(plain)}/{n}"))
        both = [(float(r["product_s"]), float(r["plain_s"])) for _, r in rows
                if r["product_ok"] and r["plain_ok"]]
        if both:
            prod_t, plain_t = [p for p, _ in both], [b for _, b in both]
            ratios = ratio_samples(prod_t, plain_t)
            lo, hi = spread(ratios)
            result.metrics.append(Metric(
                f"{backend}: product / torch-mlir time (models both lower)",
                median(prod_t) / median(plain_t), "x", None, "<=", ratios, lo, hi))
    result.metrics.append(Metric("fails in the product where torch-mlir lowers",
                                 float(len(product_only_fails)), "count", 0.0, "<=",
                                 note=", ".join(product_only_fails)))
    result.metrics.append(Metric("fails in both where torch-mlir fails for a non-persistent "
                                 "buffer", float(len(buffer_fails)), "count", 0.0, "<=",
                                 note=", ".join(buffer_fails)))
    result.metrics.append(Metric("worker restarts during the figure", float(restarts), "count",
                                 0.0, "<="))
    result.details["per model and backend"] = outcomes

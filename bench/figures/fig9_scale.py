"""Figure 9: scale: 16 M to 70 B-parameter shapes, product and plain torch-mlir.

Models (`bench/scale_models.py`, plain PyTorch): the 20-layer LM (~16 M parameters), GPT-2
small's shape (~124 M, sequence 128) and a Llama-shaped model (~1.1 B: d 2048, 22 layers,
32 heads, 4 KV heads, MLP 5632, vocab 32000, sequence 128).

The product: a fresh server per model (default settings, but a 300 s time-out, so a slow run
gives a number rather than an error); opening the file starts its check, the first lowering
(untimed) warms the worker; then each timed run changes the text (a comment: every cache
misses) and times `torchMlirLens/lower` to linalg, i.e. edit to IR with a warm worker, and
waits, untimed, for the check's other targets. The worker's peak RSS (VmHWM, the whole life
of the worker) is read from /proc at the end. For the 1.1 B model, its `Block` is then lowered
alone (derived inputs: figure 4's path) and timed the same way.

Plain torch-mlir: a fresh `bench/baseline_worker.py` per model with RLIMIT_AS at 8 GB (it
cannot take the machine down), warmed on the MLP example, then `export_and_import(...,
output_type="linalg-on-tensors")` on the same module and inputs; its time, peak RSS, or how it
failed. The product's worker keeps its own 8 GB limit (the default setting).

Then the same Llama file at Llama-2-7B's and Llama-2-70B's shapes (d 4096 / 8192, 32 / 80
layers), product only (plain torch-mlir would need their 25 GB / 269 GB of weights): one timed
edit to IR each, the worker's peak RSS, and torch.export's share of the time (the worker's
`export` phase over the whole edit-to-IR time).

Targets: GPT-2 small ≤ 4 s from edit to IR and worker peak RSS ≤ 1.5 GB; 1.1 B ≤ 20 s and
≤ 3 GB; the 70 B shape ≤ 20 s and ≤ 3 GB. The 16 M and 6.7 B models, the export share and the
baseline figures are information.
"""

from __future__ import annotations

import contextlib
import signal
import time
from typing import Any

from bench.baseline import BaselineProcess
from bench.context import BenchError, Context, bump, check_lower, worker_pid
from bench.lsp_client import peak_rss_mb
from bench.models import BenchModel, example
from bench.report import FigureResult, Metric, metric_from_samples
from bench.scale_models import big_models, scale_models
from bench.stats import median

NUMBER = 9
NAME = "scale"
TITLE = "Big models"
TIMEOUT_S = 2400.0  # three models on both sides; plain torch-mlir on 1.1 B takes minutes
IN_SMOKE = False  # the harness smoke test keeps to figures 1-7 (time); `--only 9 --smoke` works
BASELINE_LIMIT_MB = 8192
SETTINGS: dict[str, Any] = {"timeoutSeconds": 300}
# (model name → (seconds target, peak RSS target in MB))
TARGETS: dict[str, tuple[float, float]] = {"gpt2": (4.0, 1536.0), "llama1b": (20.0, 3072.0),
                                           "llama70b": (20.0, 3072.0)}
SUBMODULE = "Block"


async def _product(ctx: Context, model: BenchModel, repeats: int,
                   block: bool) -> dict[str, Any]:
    """Times (s), the worker's peak RSS (MB) and what the results said, on a fresh server."""
    client = await ctx.new_server(f"server-fig9-{model.name}", SETTINGS)
    out: dict[str, Any] = {"times": [], "block_times": []}
    try:
        with contextlib.suppress(Exception):
            await client.server_info()
        original = model.path.read_text()
        uri = client.open(model.path, original)
        names = [(model.module, "times")] + ([(SUBMODULE, "block_times")] if block else [])
        n = 0
        for name, key in names:
            for k in range(-1, repeats):  # k = -1: warm-up (the first lowering of the worker)
                n += 1
                if k >= 0 or name != model.module:
                    client.change(uri, bump(original, n))
                res, t = await client.lower(uri, name, "linalg")
                res = check_lower(res, f"{model.name} {name}")
                await client.wait_idle()
                stats = res.get("stats") or {}
                out[f"{name} construction"] = (f"{stats.get('construction')}: "
                                               f"{stats.get('constructionReason')}")
                out[f"{name} inputs"] = res.get("inputsSource")
                if k >= 0:
                    out[key].append(t)
                    out[f"{name} phases (s)"] = {p: round(float(v), 2) for p, v in
                                                 (res.get("timings") or {}).items()}
        info: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            info = await client.server_info()
        pid = worker_pid(client, info)
        if pid is None:
            raise BenchError("no worker process found")
        out["peak"] = peak_rss_mb(pid)
        client.close(uri)
        return out
    finally:
        await ctx.stop_server(client)


async def _plain(ctx: Context, model: BenchModel, runs: int) -> dict[str, Any]:
    """Plain export_and_import under an 8 GB address-space limit: times, peak, or the failure."""
    base = BaselineProcess(ctx.config.python, ctx.log_path(f"baseline-fig9-{model.name}"),
                           memory_limit_mb=BASELINE_LIMIT_MB)
    await base.start()
    out: dict[str, Any] = {"times": [], "peak": 0.0, "error": None}
    try:
        await base.lower(example("mlp", ctx.work))  # warm: torch's lazy first-export work
        for _ in range(runs):
            t0 = time.perf_counter()
            try:
                reply = await base.lower(model, timeout=1800.0, check=False)
            except RuntimeError as exc:  # the process died (an allocation it could not survive)
                assert base.proc is not None
                code = await base.proc.wait()
                how = (f"killed by {signal.Signals(-code).name}" if code < 0
                       else f"exit code {code}")
                out["error"] = f"process died after {time.perf_counter() - t0:.0f} s ({how}): {exc}"
                return out
            out["peak"] = max(out["peak"], float(reply.get("peak_rss_kb") or 0) / 1024)
            if not reply.get("ok"):
                out["error"] = (f"failed after {reply.get('seconds', 0):.0f} s at peak RSS "
                                f"{out['peak']:.0f} MB: {str(reply.get('error'))[:300]}")
                return out
            out["times"].append(float(reply["seconds"]))
        return out
    finally:
        await base.stop()


async def run(ctx: Context) -> FigureResult:
    """Each model: product (fresh server) then plain torch-mlir (fresh, limited process)."""
    result = FigureResult(NUMBER, TITLE)
    repeats = 1 if ctx.config.quick else 3
    for model in scale_models(ctx.work, tiny=ctx.config.smoke):
        key = model.name.replace("_tiny", "") if not ctx.config.smoke else model.name
        block = model.name.startswith("llama")
        t_target, rss_target = TARGETS.get(key, (None, None))
        try:
            prod = await _product(ctx, model, repeats, block)
        except Exception as exc:  # one model failing must not hide the others
            result.details[f"{model.name} product error"] = f"{type(exc).__name__}: {exc}"[:500]
            prod = {"times": [float("nan")], "block_times": [], "peak": float("nan")}
        plain = await _plain(ctx, model, 1 if key != "lm20" else repeats)
        result.metrics += [
            metric_from_samples(f"{model.name}: edit to IR, product", prod["times"], "s",
                                t_target),
            Metric(f"{model.name}: worker peak RSS", prod["peak"], "MB", rss_target),
        ]
        if prod["block_times"]:
            result.metrics.append(metric_from_samples(
                f"{model.name}: one {SUBMODULE} alone (derived inputs)", prod["block_times"],
                "s", None))
        if plain["times"]:
            result.metrics += [
                metric_from_samples(f"{model.name}: plain torch-mlir", plain["times"], "s", None),
                Metric(f"{model.name}: product / plain torch-mlir",
                       median(prod["times"]) / median(plain["times"]), "x", None),
            ]
        result.metrics.append(Metric(f"{model.name}: plain torch-mlir peak RSS", plain["peak"],
                                     "MB", None))
        result.details[f"{model.name} product"] = {k: v for k, v in prod.items()
                                                   if k not in ("times", "block_times", "peak")}
        if plain["error"]:
            result.details[f"{model.name} plain torch-mlir (RLIMIT_AS "
                           f"{BASELINE_LIMIT_MB} MB)"] = plain["error"]
    if not ctx.config.smoke:
        await _big_shapes(ctx, result)
    return result


async def _big_shapes(ctx: Context, result: FigureResult) -> None:
    """The 6.7 B and 70 B shapes: edit to IR, peak RSS and the export's share of the time."""
    for model in big_models(ctx.work):
        t_target, rss_target = TARGETS.get(model.name, (None, None))
        try:
            prod = await _product(ctx, model, 1, block=False)
        except Exception as exc:
            result.details[f"{model.name} product error"] = f"{type(exc).__name__}: {exc}"[:500]
            continue
        phases = prod.get(f"{model.module} phases (s)") or {}
        total = median(prod["times"])
        result.metrics += [
            metric_from_samples(f"{model.name}: edit to IR, product", prod["times"], "s",
                                t_target),
            Metric(f"{model.name}: worker peak RSS", prod["peak"], "MB", rss_target),
            Metric(f"{model.name}: torch.export's share of the time",
                   float(phases.get("export", float("nan"))) / total, "x", None),
        ]
        result.details[f"{model.name} product"] = {k: v for k, v in prod.items()
                                                   if k not in ("times", "block_times", "peak")}


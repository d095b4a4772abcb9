"""Figure 6: worker peak memory lowering the 20-layer model, and the size of the IR shown.

A fresh server (default settings: opening the file checks the LM, linalg plus the diagnosed
backends, in one export) lowers the LM to linalg once; the worker's peak RSS (VmHWM)
is read from /proc. A fresh plain process imports torch and torch-mlir and runs
`export_and_import(..., output_type="linalg-on-tensors")` on the same model and inputs; its
VmHWM is the baseline. The IR the product returns (weights elided) is measured in bytes.
Targets: worker / plain ≤ 1.2; IR ≤ 2 MB.
"""

from __future__ import annotations

import contextlib

from bench.baseline import BaselineProcess
from bench.context import BenchError, Context, check_lower, worker_pid
from bench.lsp_client import peak_rss_mb
from bench.models import lm20
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import median, ratio_samples, spread

NUMBER = 6
NAME = "memory"
TITLE = "Memory"
TARGET_RATIO = 1.2
TARGET_IR_MB = 2.0


async def product_peak(ctx: Context, run: int) -> tuple[float, float, float]:
    """(worker VmHWM MB, IR MB, worker VmHWM MB before lowering) on a fresh server."""
    model = lm20(ctx.work, tiny=ctx.config.smoke)
    client = await ctx.fresh_server(f"server-fig6-{run}")
    try:
        info: dict = {}
        with contextlib.suppress(Exception):
            info = await client.server_info()
        pid = worker_pid(client, info)
        idle = peak_rss_mb(pid) if pid else float("nan")
        uri = client.open(model.path)
        res, _ = await client.lower(uri, model.module, "linalg")
        res = check_lower(res, "lm lower")
        await client.wait_idle()  # the check's other targets may follow the answer: count them
        with contextlib.suppress(Exception):
            info = await client.server_info()
        pid = worker_pid(client, info)
        if pid is None:
            raise BenchError("no worker process found")
        peak = peak_rss_mb(pid)
        return peak, len(res["ir"].encode()) / 2**20, idle
    finally:
        await ctx.release(client)


async def plain_peak(ctx: Context) -> float:
    """VmHWM (MB) of a fresh plain torch-mlir process lowering the same model."""
    base = BaselineProcess(ctx.config.python, ctx.log_path("baseline-fig6"))
    await base.start()
    try:
        reply = await base.lower(lm20(ctx.work, tiny=ctx.config.smoke))
        return float(reply["peak_rss_kb"]) / 1024
    finally:
        await base.stop()


async def run(ctx: Context) -> FigureResult:
    """Alternate product and plain runs; compare peak RSS."""
    result = FigureResult(NUMBER, TITLE)
    worker, plain, ir_mb, idle = [], [], [], []
    for r in range(ctx.config.fig6_runs):
        if r % 2 == 0:
            p = await product_peak(ctx, r)
            b = await plain_peak(ctx)
        else:
            b = await plain_peak(ctx)
            p = await product_peak(ctx, r)
        worker.append(p[0])
        ir_mb.append(p[1])
        idle.append(p[2])
        plain.append(b)
    ratios = ratio_samples(worker, plain)
    lo, hi = spread(ratios)
    result.metrics += [
        Metric("worker peak / plain peak", median(worker) / median(plain), "x", TARGET_RATIO,
               "<=", ratios, lo, hi),
        metric_from_samples("worker peak RSS", worker, "MB", None),
        metric_from_samples("plain torch-mlir peak RSS", plain, "MB", None),
        metric_from_samples("IR shown (weights elided)", ir_mb, "MB", TARGET_IR_MB),
    ]
    result.details["worker peak RSS before lowering (MB)"] = [round(x, 1) for x in idle]
    result.details["model"] = lm20(ctx.work, tiny=ctx.config.smoke).name
    return result

"""Figure 3: static features on a 3,000-line file with 60 module classes.

A fresh server (trusted, diagnostics off so the worker stays idle; timing starts once its
worker is up) opens the generated file.
Each timed iteration edits one line inside a `forward` (an incremental didChange, as an editor
sends it) and then asks for the code
lenses: time from the change to the lenses. Then the LSP process's RSS (psutil) and whether
torch or torch-mlir is loaded in it (serverInfo.torchImported and /proc/<pid>/maps).
Targets: p95 ≤ 100 ms; RSS ≤ 150 MB; no torch in the LSP process.
"""

from __future__ import annotations

import contextlib
import time

import psutil

from bench.context import Context
from bench.gen_files import zoo_file
from bench.lsp_client import maps_have_torch
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import percentile, spread

NUMBER = 3
NAME = "static"
TITLE = "Static features"
TARGET_P95_MS = 100.0
TARGET_RSS_MB = 150.0


async def run(ctx: Context) -> FigureResult:
    """Time lenses after edits, then measure the LSP process."""
    result = FigureResult(NUMBER, TITLE)
    path = zoo_file(ctx.work)
    text = path.read_text()
    edit_at = [i for i, ln in enumerate(text.splitlines()) if ln.strip() == "out = z + 0.0"]
    client = await ctx.fresh_server("server-fig3", quiet=True)
    try:
        uri = client.open(path, text)
        lenses, t_first = await client.code_lens(uri)
        times = []
        for k in range(ctx.config.lens_repeats):
            at = edit_at[k % len(edit_at)]
            t0 = time.perf_counter()
            client.change_line(uri, at, f"        out = z + {k / 10:.1f}")  # a keystroke
            lenses, _ = await client.code_lens(uri)
            times.append((time.perf_counter() - t0) * 1000)
        n_lenses = len(lenses or [])
        proc = psutil.Process(client.pid)
        rss = proc.memory_info().rss / 2**20
        info: dict = {}
        with contextlib.suppress(Exception):
            info = await client.server_info()
        torch_in_maps = maps_have_torch(client.pid)
        torch_imported = bool(info.get("torchImported", False)) or torch_in_maps
    finally:
        await ctx.release(client)

    p95 = percentile(times, 95)
    lo, hi = spread(times)
    result.metrics += [
        Metric("lenses after an edit, p95", p95, "ms", TARGET_P95_MS, "<=", times, lo, hi),
        Metric("lenses after an edit, p50", percentile(times, 50), "ms", None),
        metric_from_samples("LSP process RSS", [rss], "MB", TARGET_RSS_MB),
        Metric("torch in the LSP process", float(torch_imported), "bool", 0.0, "=="),
    ]
    result.details.update({
        "file lines": len(text.splitlines()),
        "module classes": text.count("\nclass "),
        "lenses returned": n_lenses,
        "first lenses after open (ms)": round(t_first * 1000, 1),
        "serverInfo.torchImported": info.get("torchImported", "n/a (no serverInfo)"),
        "torch libraries in /proc/<pid>/maps": torch_in_maps,
    })
    return result

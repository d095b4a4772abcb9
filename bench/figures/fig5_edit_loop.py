"""Figure 5: the edit loop — change a line of one module of five, save, fresh diagnostics.

A fresh server with the default diagnostics settings (on open and on save; linalg, tosa,
stablehlo) opens a 5-module file and, as the reference, a file holding only the edited module;
both are left to settle (all modules lowered). Each run changes the same line in both (a new
constant), saves one, waits for its diagnostics, then the other (order alternating). The time is
from didSave to the file's last publishDiagnostics of that check (the check is over when the
status is `ready` and the server stays quiet for 1 s); exports are counted with serverInfo
(exports_run before/after).
Targets: exactly 1 export per save; time ≤ 1.1 × the module's own edit loop (the 1-module file).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bench.context import BenchError, Context
from bench.gen_files import EDITED_MODULE, edit_files, edit_source
from bench.lsp_client import LensClient
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import median, ratio_samples, spread

NUMBER = 5
NAME = "edit-loop"
TITLE = "Edit loop"
TARGET_RATIO = 1.10
QUIET_S = 1.0  # no diagnostics or status for this long after the last one → settled


async def exports_run(client: LensClient) -> int:
    """The worker's export counter (serverInfo → engine.exports_run)."""
    info = await client.server_info()
    engine = info.get("engine") or {}
    for key in ("exportsRun", "exports_run"):
        if key in engine:
            return int(engine[key])
    raise BenchError(f"serverInfo has no engine.exportsRun: {info!r:.300}")


async def settle(client: LensClient, uri: str, since: float, timeout: float = 300.0) -> float:
    """Wait until the check that started after `since` is over; return its last publish time.

    The server publishes after each module and reports `lowering` / `ready` around each job;
    the check is over once the status is `ready` and nothing came for QUIET_S.
    (`workspace/codeLens/refresh` is no end marker: it is debounced and comes mid-check.)
    """
    await client.wait_for(lambda: client.diagnostics_since(uri, since), timeout)
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        events = [e for e in client.log.events if e.t >= since and e.method in (
            "textDocument/publishDiagnostics", "torchMlirLens/status")]
        last = max(e.t for e in events)
        states = client.statuses_since(since)
        busy = bool(states) and states[-1] in ("lowering", "starting")
        wait = last + QUIET_S - time.perf_counter()
        if wait <= 0 and not busy:
            return max(e.t for e in client.diagnostics_since(uri, since))
        await asyncio.sleep(max(min(wait, 0.1), 0.02))
    raise TimeoutError("diagnostics did not settle")


async def edit_and_save(client: LensClient, uri: str, path: Path, text: str) -> float:
    """Change the text, save; seconds from didSave to the file's settled diagnostics."""
    client.change(uri, text)
    t0 = time.perf_counter()
    client.save(uri, path)
    return await settle(client, uri, t0) - t0


async def run(ctx: Context) -> FigureResult:
    """Open both files, let them settle, then time interleaved edit-save loops."""
    result = FigureResult(NUMBER, TITLE)
    n_modules = 2 if ctx.config.smoke else 5
    five, alone = edit_files(ctx.work, n_modules)
    client = await ctx.fresh_server("server-fig5")
    try:
        t0 = time.perf_counter()
        uri5 = client.open(five)
        await settle(client, uri5, t0)
        t1 = time.perf_counter()
        uri1 = client.open(alone)
        await settle(client, uri1, t1)
        result.details["settle after open, 5 modules (s)"] = round(t1 - t0, 2)
        base_exports = await exports_run(client)
        t5, t1s, deltas = [], [], []
        for k in range(1, ctx.config.fig5_repeats + 1):
            jobs = [(uri5, five, edit_source(k, n_modules=n_modules)),
                    (uri1, alone, edit_source(k, EDITED_MODULE))]
            if k % 2 == 0:
                jobs.reverse()
            for uri, path, text in jobs:
                before = await exports_run(client)
                t = await edit_and_save(client, uri, path, text)
                after = await exports_run(client)
                if uri == uri5:
                    t5.append(t)
                    deltas.append(after - before)
                else:
                    t1s.append(t)
        result.details["exports at settle"] = base_exports
        result.details["modules in the file"] = n_modules
    finally:
        await ctx.release(client)

    exports = 1.0 if all(d == 1 for d in deltas) else float(
        max(deltas) if max(deltas) != 1 else min(deltas))
    ratio = median(t5) / median(t1s)
    ratios = ratio_samples(t5, t1s)
    lo, hi = spread(ratios)
    result.metrics += [
        Metric("exports per save", exports, "count", 1.0, "==", [float(d) for d in deltas],
               float(min(deltas)), float(max(deltas))),
        Metric("5-module file / module alone", ratio, "x", TARGET_RATIO, "<=", ratios, lo, hi),
        metric_from_samples("save → diagnostics, 5 modules", t5, "s", None),
        metric_from_samples("save → diagnostics, module alone", t1s, "s", None),
    ]
    return result

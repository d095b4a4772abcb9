"""Figure 12: reopen — a second server process answers from the persistent result cache.

For the 20-layer LM and the `transformers` zoo (each model alone in its own folder, default
settings): a server with an empty persistent cache folder opens the file and hovers the first
line of `forward` until the hover shows IR (time from the answer to `initialize`: the server
is up; figure 7 times its start), then waits until the
server is idle (the file's checks done: diagnostics and verdict lenses; time of the last
diagnostics). The server stops; a second server process with the same cache folder does the
same. Recorded: both times, the reopen / first-open ratio, and the second server's worker
counters (nothing exported, every check a confirmed cache entry).
Targets (the 20-layer LM): reopen first hover ≤ 0.5 s and ≤ 0.25× the first open.
"""

from __future__ import annotations

import ast
import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

from tests.harness.lsp_session import hover_text

from bench.context import DEFAULT_SETTINGS, BenchError, Context
from bench.figures.fig8_zoo import ZOO, zoo_models
from bench.models import BenchModel, lm20, only_classes_of
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import median

NUMBER = 12
IN_SMOKE = False  # two server processes per model: tests/lsp/test_reopen.py covers it
NAME = "reopen"
TITLE = "Reopen from the persistent cache"
TARGET_REOPEN_S = 0.5
TARGET_RATIO = 0.25
ZOO_MODELS = ("TinyGPT2", "TinyLlama", "TinyBert", "TinyT5Encoder", "TinyViT",
              "TinyWhisperEncoder")


def first_op_line(model: BenchModel) -> tuple[int, int]:
    """(0-based line, column) of the first statement of `forward` that calls a submodule
    (`self.x(...)`): a line that certainly produced ops."""
    tree = ast.parse(model.path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == model.module)
    forward = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward")
    for stmt in forward.body:
        for node in ast.walk(stmt):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
                return stmt.lineno - 1, stmt.col_offset + 2
    raise BenchError(f"{model.name}: no submodule call in forward")


def _alone(model: BenchModel, folder: Path) -> BenchModel:
    """The model's class (and what it uses) alone in a file of its own folder."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{model.name.lower()}.py"
    path.write_text(only_classes_of(model.path.read_text(), model.module))
    return BenchModel(model.name, path, model.module, model.inputs)


async def _session(ctx: Context, model: BenchModel, cache: Path, name: str) -> dict[str, Any]:
    """Open, hover until IR, wait for the checks; times from the answer to `initialize` (the
    server process is up: how fast it gets there is figure 7's)."""
    client = await ctx.new_server(name, DEFAULT_SETTINGS, workspace=model.path.parent,
                                  env={"TORCH_MLIR_LENS_CACHE_DIR": str(cache)})
    try:
        uri = client.open(model.path)
        line, col = first_op_line(model)
        deadline = time.perf_counter() + 300
        while True:
            hover, _ = await client.hover(uri, line, col)
            if "```mlir" in hover_text(hover):
                break
            if time.perf_counter() > deadline:
                raise BenchError(f"{model.name}: no hover with IR within 300 s")
            await asyncio.sleep(0.02)
        t_hover = time.perf_counter() - client.t_initialized
        await client.wait_idle(300)
        published = client.diagnostics_since(uri, 0.0)
        t_diag = (published[-1].t - client.t_initialized) if published else float("nan")
        info = await client.server_info()
        return {"hover": t_hover, "diagnostics": t_diag, "engine": info.get("engine") or {},
                "start": client.t_initialized - client.t_spawn}
    finally:
        await ctx.stop_server(client)


async def _first_and_reopen(ctx: Context, model: BenchModel) -> dict[str, Any]:
    folder = ctx.work / "fig12" / model.name
    shutil.rmtree(folder, ignore_errors=True)
    alone = _alone(model, folder / "project")
    cache = folder / "cache"
    first = await _session(ctx, alone, cache, f"server-fig12-{model.name}-first")
    again = await _session(ctx, alone, cache, f"server-fig12-{model.name}-reopen")
    engine = again["engine"]
    return {"first": first, "reopen": again,
            "reopen_exports": engine.get("exportsRun"),
            "reopen_hits": engine.get("persistentHits"),
            "reopen_stale": engine.get("persistentStale")}


async def run(ctx: Context) -> FigureResult:
    """The LM, then each zoo model: a first open and a reopen, each in a new process."""
    result = FigureResult(NUMBER, TITLE)
    lm = lm20(ctx.work, tiny=ctx.config.smoke)
    zoo = [m for m in zoo_models(ctx.config.smoke)
           if m.name in ZOO_MODELS or ctx.config.smoke][: 2 if ctx.config.smoke else None]
    runs = {}
    for model in [lm, *zoo]:
        runs[model.name] = await _first_and_reopen(ctx, model)
    lm_run = runs[lm.name]
    lm_first, lm_again = lm_run["first"]["hover"], lm_run["reopen"]["hover"]
    zoo_ratios = [r["reopen"]["hover"] / r["first"]["hover"]
                  for name, r in runs.items() if name != lm.name]
    zoo_diag = [r["reopen"]["diagnostics"] / r["first"]["diagnostics"]
                for name, r in runs.items() if name != lm.name]
    result.metrics += [
        Metric(f"{lm.name}: reopen → first hover with IR", lm_again, "s", TARGET_REOPEN_S,
               "<=", [lm_again]),
        Metric(f"{lm.name}: reopen / first open (first hover)", lm_again / lm_first, "x",
               TARGET_RATIO, "<=", [lm_again / lm_first]),
        Metric(f"{lm.name}: first open → first hover with IR", lm_first, "s", None, "<=",
               [lm_first]),
        Metric(f"{lm.name}: reopen / first open (diagnostics)",
               lm_run["reopen"]["diagnostics"] / lm_run["first"]["diagnostics"], "x", None),
        metric_from_samples(f"zoo ({len(zoo_ratios)} models): reopen / first open (hover)",
                            zoo_ratios, "x", None),
        metric_from_samples("zoo: reopen / first open (diagnostics)", zoo_diag, "x", None),
        Metric("exports by the reopening servers", float(sum(
            int(r["reopen_exports"] or 0) for r in runs.values())), "", 0, "=="),
    ]
    result.details["runs"] = runs
    result.details["zoo_median_reopen_hover_s"] = median(
        [r["reopen"]["hover"] for n, r in runs.items() if n != lm.name]) if zoo_ratios else None
    result.details["zoo_source"] = ZOO.name
    return result

"""Figure 7: cold start — `serve` to first lenses, and to the first hover with IR on the MLP.

Product: spawn `python -m torch_mlir_lens serve` (default settings, trusted), initialize, open
the MLP example, ask for code lenses (time since spawn), then hover the first line of
`forward` until the hover shows IR (time since spawn). Baseline: a cold `python -c` script that
imports torch and torch-mlir, builds the MLP with the same inputs, lowers it to linalg with
`export_and_import` and prints the IR; time from spawn to its output. Interleaved.
Targets: lenses ≤ 0.5 s; hover / script ≤ 1.1.

The first lenses come from the start-up front (`lsp/front.py`), which answers `initialize` with
the answer kept from an earlier start of the same build and client: the first start after an
install has none and loads the full server first (as every start did before the front).
"""

from __future__ import annotations

import ast
import asyncio
import time

from tests.harness.lsp_session import child_env, hover_text

from bench.context import Context
from bench.models import BenchModel, example
from bench.report import FigureResult, Metric, metric_from_samples
from bench.stats import median, ratio_samples, spread

NUMBER = 7
NAME = "cold-start"
TITLE = "Cold start"
TARGET_LENS_S = 0.5
TARGET_RATIO = 1.1

COLD_SCRIPT = """\
import runpy, sys
import torch
from torch_mlir import fx
path, name, init, inputs = sys.argv[1:5]
ns = runpy.run_path(path, run_name="cold_script")
torch.manual_seed(0)
init = eval(init, ns)
cls = ns[name]
m = (cls(**init) if isinstance(init, dict) else cls(*init)).eval()
out = fx.export_and_import(m, *eval(inputs, ns), output_type="linalg-on-tensors")
text = out.operation.get_asm(large_resource_limit=16)
print("DONE", len(text), flush=True)
"""


def first_forward_line(model: BenchModel) -> tuple[int, int]:
    """(0-based line, column) of the first statement of the model's `forward`."""
    tree = ast.parse(model.path.read_text())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == model.module:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                    stmt = fn.body[1] if isinstance(fn.body[0], ast.Expr) else fn.body[0]
                    return stmt.lineno - 1, stmt.col_offset + 2
    raise ValueError(f"no forward in {model.module}")


async def product_cold(ctx: Context, model: BenchModel, run: int) -> tuple[float, float]:
    """(spawn → first lenses, spawn → first hover with IR) in seconds."""
    client = await ctx.new_server(f"server-fig7-{run}", {})
    try:
        uri = client.open(model.path)
        await client.code_lens(uri)
        t_lens = time.perf_counter() - client.t_spawn
        line, col = first_forward_line(model)
        deadline = time.perf_counter() + 180
        while True:
            hov, _ = await client.hover(uri, line, col)
            text = hover_text(hov)
            if "mlir" in text or "linalg" in text:
                break
            if time.perf_counter() > deadline:
                raise TimeoutError("no hover with IR within 180 s")
            await asyncio.sleep(0.05)
        return t_lens, time.perf_counter() - client.t_spawn
    finally:
        await ctx.stop_server(client)


async def script_cold(ctx: Context, model: BenchModel) -> float:
    """Spawn → output of a cold plain torch-mlir script lowering the same model."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        ctx.config.python, "-c", COLD_SCRIPT, str(model.path), model.module, model.init,
        model.inputs, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=child_env(),
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 300)
    t = time.perf_counter() - t0
    await proc.wait()
    if not line.startswith(b"DONE"):
        raise RuntimeError(f"cold script failed (exit {proc.returncode})")
    return t


async def run(ctx: Context) -> FigureResult:
    """Alternate cold product starts and cold scripts."""
    result = FigureResult(NUMBER, TITLE)
    model = example("mlp", ctx.work)
    lens, hover, script = [], [], []
    for r in range(ctx.config.fig7_repeats):
        if r % 2 == 0:
            t_lens, t_hover = await product_cold(ctx, model, r)
            t_script = await script_cold(ctx, model)
        else:
            t_script = await script_cold(ctx, model)
            t_lens, t_hover = await product_cold(ctx, model, r)
        lens.append(t_lens)
        hover.append(t_hover)
        script.append(t_script)
    ratios = ratio_samples(hover, script)
    lo, hi = spread(ratios)
    result.metrics += [
        metric_from_samples("serve → first lenses", lens, "s", TARGET_LENS_S),
        Metric("serve → first hover with IR / cold script", median(hover) / median(script), "x",
               TARGET_RATIO, "<=", ratios, lo, hi),
        metric_from_samples("serve → first hover with IR", hover, "s", None),
        metric_from_samples("cold python -c script", script, "s", None),
    ]
    result.details["model"] = f"{model.path.name}::{model.module}"
    return result

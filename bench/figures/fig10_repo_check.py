"""Figure 10: `check -j 2` over a generated repository of 200 modules in 50 files.

Product: `torch-mlir-lens check REPO -j 2 --format json` as a process (linalg, tosa and
stablehlo, the default targets), from spawn to exit: worker start-ups included, every module
must come back ok. Reference 1, the sum of single-module runs: each module lowered alone to the
same three targets on a warm worker (one `Engine.lower` each, timed one after another), summed.
Reference 2, N plain torch-mlir processes: 2 processes (`bench/baseline_worker.py`) started
together, each taking half of the modules (the same contiguous split as `--shard`) and calling
`export_and_import` once per target, from spawn to the last one done. One run each, in this
order: check, plain, single (--quick: 40 modules in 10 files; --smoke: 2 in 1).
Targets: check / sum of single runs ≤ 0.65 (2 workers pay off); check / 2 plain processes
≤ 1.1 (isolation, discovery and reports cost at most 10 % over a hand-written parallel script).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

from tests.harness.lsp_session import child_env

from bench.baseline import BaselineProcess
from bench.context import BenchError, Context
from bench.models import BenchModel
from bench.report import FigureResult, Metric

NUMBER = 10
NAME = "repo-check"
TITLE = "Repository check, 2 workers"
TARGET_VS_SUM = 0.65
TARGET_VS_PLAIN = 1.10
TARGETS = ("linalg", "tosa", "stablehlo")
OUTPUT_TYPES = ("linalg-on-tensors", "tosa", "stablehlo")
JOBS = 2

HEADER = '''"""Generated models (Torch-MLIR Lens benchmark, figure 10)."""

import torch
from torch import nn

'''
MODULE = '''

# torch-mlir-lens: inputs=(torch.randn(4, {d}),)
class {name}(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm({d})
        self.up = nn.Linear({d}, {h})
        self.down = nn.Linear({h}, {d})

    def forward(self, x):
        y = self.up(self.norm(x))
        y = torch.{act}(y)
        return x + self.down(y) * {scale}
'''
ACTS = ("relu", "tanh", "sigmoid")


def sizes(ctx: Context) -> tuple[int, int]:
    """(modules, files) of this run."""
    if ctx.config.smoke:
        return 2, 1
    if ctx.config.quick:
        return 40, 10
    return 200, 50


def generate(root: Path, modules: int, files: int) -> list[BenchModel]:
    """A repository of `files` files with `modules` modules in all, in file and line order."""
    shutil.rmtree(root, ignore_errors=True)
    (root / "models").mkdir(parents=True)
    per_file = modules // files
    out = []
    for f in range(files):
        path = root / "models" / f"zoo_{f:03d}.py"
        body = [HEADER]
        for k in range(per_file):
            i = f * per_file + k
            d, h = 8 + 4 * (i % 5), 16 + 8 * (i % 3)
            name = f"Block{i:03d}"
            body.append(MODULE.format(name=name, d=d, h=h, act=ACTS[i % 3],
                                      scale=0.5 + (i % 7) / 10))
            out.append(BenchModel(name, path, name, f"(torch.randn(4, {d}),)"))
        path.write_text("".join(body))
    return out


async def run_check(ctx: Context, root: Path, report: Path) -> float:
    """Wall seconds of `check REPO -j 2`; raises unless every module is ok."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        ctx.config.python, "-m", "torch_mlir_lens", "check", "models", "-j", str(JOBS),
        "--format", "json", "-o", str(report), cwd=root, env=child_env(),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise BenchError(f"check exited {proc.returncode}: {err.decode()[-500:]}")
    return seconds


async def run_plain(ctx: Context, models: list[BenchModel]) -> float:
    """Wall seconds of JOBS plain torch-mlir processes sharing the modules (spawn included)."""
    halves = [models[i * len(models) // JOBS:(i + 1) * len(models) // JOBS]
              for i in range(JOBS)]

    async def one(part: list[BenchModel], k: int) -> None:
        base = BaselineProcess(ctx.config.python, ctx.log_path(f"fig10-plain-{k}"))
        await base.start()
        try:
            for model in part:
                for output_type in OUTPUT_TYPES:
                    await base.lower(model, output_type=output_type)
        finally:
            await base.stop()

    t0 = time.perf_counter()
    await asyncio.gather(*(one(part, k) for k, part in enumerate(halves)))
    return time.perf_counter() - t0


async def run_single(ctx: Context, models: list[BenchModel]) -> list[float]:
    """Each module alone on a warm worker: seconds per module."""
    from torch_mlir_lens.engine import Engine, EngineConfig, ModuleJob

    engine = Engine(EngineConfig(python=ctx.config.python))
    await engine.start()
    try:
        await engine.wait_ready()
        times = []
        for model in models:
            job = ModuleJob(path=str(model.path), module=model.module)
            t0 = time.perf_counter()
            results = await engine.lower(job, targets=list(TARGETS))
            times.append(time.perf_counter() - t0)
            if not all(r.ok for r in results):
                raise BenchError(f"{model.module} does not lower alone")
        return times
    finally:
        await engine.stop()


async def run(ctx: Context) -> FigureResult:
    """Measure figure 10."""
    modules, files = sizes(ctx)
    root = ctx.work / "fig10-repo"
    models = generate(root, modules, files)
    report_path = ctx.work / "fig10-check.json"
    check_s = await run_check(ctx, root, report_path)
    data = json.loads(report_path.read_text())
    if data["summary"]["modules"] != modules or data["summary"]["ok"] != modules:
        raise BenchError(f"check did not pass every module: {data['summary']}")
    plain_s = await run_plain(ctx, models)
    single = await run_single(ctx, models)
    total = sum(single)
    res = FigureResult(NUMBER, TITLE)
    res.metrics = [
        Metric("check -j 2 / sum of single-module runs", check_s / total, "x", TARGET_VS_SUM,
               samples=[check_s / total]),
        Metric("check -j 2 / 2 plain torch-mlir processes", check_s / plain_s, "x",
               TARGET_VS_PLAIN, samples=[check_s / plain_s]),
        Metric("check -j 2 wall", check_s, "s", None, samples=[check_s]),
    ]
    res.details = {
        "modules": modules, "files": files, "targets": ",".join(TARGETS), "jobs": JOBS,
        "check_s": round(check_s, 2), "sum_single_s": round(total, 2),
        "plain_2_processes_s": round(plain_s, 2),
        "single_median_s": round(sorted(single)[len(single) // 2], 3),
    }
    return res

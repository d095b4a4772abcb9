"""How fast the compiled module runs: against eager PyTorch, and per dispatch, per line.

    time_module(loaded, inputs, fn, args, kwargs)      → Speed (compiled and eager ms per call)
    profile_dispatches(install, vmfb, inputs, ...)     → {entry point: ms per call}
    line_costs(dispatches)                             → each line's share of the time

The module time: the compiled `main` (iree.runtime, the CPU driver on torch's thread count,
runtime.py) and eager's forward (no grad) on the same inputs, each warmed up, then timed as
`timeit` times code: batches of calls, the best batch mean kept.

The per-dispatch time: IREE's HAL-native profiling (IREE 3.13's `iree-benchmark-module
--device_profiling_mode=host-execution --device_profiling_output=FILE.ireeprof`, which the
CPU driver supports) records each dispatch's execution on the host; `iree-profile dispatch
--format=jsonl FILE` sums them per entry point (`host_dispatch_group` rows: `key`,
`total_ns`). A dispatch's time divided by the number of calls is its cost per call; a line's
cost is its share of the dispatches it was fused into (a dispatch of two lines counts half to
each), so the lines' costs add up to the dispatches'.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from torch_mlir_lens.worker.iree.dispatches import Dispatch
from torch_mlir_lens.worker.iree.runtime import Loaded, cpu_threads
from torch_mlir_lens.worker.iree.tools import Install, run_tool

BATCH_S = 0.02  # a batch of calls lasts at least this long (its mean is one sample)
MAX_BATCH = 100  # calls in a batch at most
REPEATS = 5  # batches per side, the two sides alternating
PROFILE_CALLS = 50  # calls of the profiled module at most
PROFILE_S = 1.0  # and about this long at most (at least 3 calls)


@dataclass
class Speed:
    """Both sides' median time per call, on the same inputs and threads."""

    compiled_ms: float
    eager_ms: float
    threads: int
    runs: int

    def to_json(self, target: str, device: str) -> dict[str, Any]:
        return {"target": target, "device": device, "compiled_ms": round(self.compiled_ms, 6),
                "eager_ms": round(self.eager_ms, 6), "threads": self.threads,
                "runs": self.runs}

    def words(self, title: str) -> str:
        """`IREE CPU 0.21 ms · eager 0.35 ms`."""
        return f"{title} {_ms(self.compiled_ms)} · eager {_ms(self.eager_ms)}"


def _ms(value: float) -> str:
    return f"{value:.3g} ms" if value >= 0.01 else f"{value * 1000:.3g} µs"


def _batch(call: Callable[[], Any]) -> int:
    """How many calls make a batch of about BATCH_S (the first calls warm up)."""
    start = time.perf_counter()
    call()
    call()
    one = max((time.perf_counter() - start) / 2, 1e-7)
    return int(min(MAX_BATCH, max(1, BATCH_S // one)))


def _mean_ms(call: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - start) / number * 1000.0


def time_module(loaded: Loaded, inputs: list[np.ndarray], fn: Callable[..., Any],
                args: tuple[Any, ...], kwargs: dict[str, Any]) -> Speed:
    """The compiled module's and eager's time per call on these inputs: as `timeit` takes
    it, the best of REPEATS batches' means, the two sides' batches alternating (a machine
    shared with other work slows some batches of either side, never speeds one up)."""
    def compiled() -> Any:
        return loaded(inputs)

    def eager() -> Any:
        return fn(*args, **kwargs)

    with torch.no_grad():
        sizes = (_batch(compiled), _batch(eager))
        best = [float("inf"), float("inf")]
        for _ in range(REPEATS):
            for side, call in enumerate((compiled, eager)):
                best[side] = min(best[side], _mean_ms(call, sizes[side]))
    return Speed(best[0], best[1], cpu_threads(), REPEATS * min(sizes))


def profile_calls(call_ms: float) -> int:
    """How many calls a profile makes of a module taking `call_ms` per call."""
    return max(3, min(PROFILE_CALLS, int(PROFILE_S * 1000.0 / max(call_ms, 1e-6))))


def profile_dispatches(install: Install, vmfb: str, inputs: list[np.ndarray],
                       folder: str, calls: int = PROFILE_CALLS) -> dict[str, float]:
    """Each dispatch entry point's time per call (ms), from IREE's HAL profiling of `calls`
    calls on the CPU driver; {} when the tools cannot say."""
    args = [f"--module={vmfb}", "--device=local-task", "--function=main",
            f"--task_topology_max_group_count={cpu_threads()}",
            f"--benchmark_min_time={calls}x", "--benchmark_repetitions=1",
            "--device_profiling_mode=host-execution"]
    for i, array in enumerate(inputs):
        path = os.path.join(folder, f"input{i}.npy")
        np.save(path, array)
        args.append(f"--input=@{path}")
    bundle = os.path.join(folder, "profile.ireeprof")
    ran = run_tool(install.tool("iree-benchmark-module"),
                   [*args, f"--device_profiling_output={bundle}"], cwd=folder)
    if ran.returncode != 0 or not os.path.isfile(bundle):
        return {}
    read = run_tool(install.tool("iree-profile"), ["dispatch", "--format=jsonl", bundle],
                    cwd=folder)
    if read.returncode != 0:
        return {}
    times: dict[str, float] = {}
    for line in read.stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if row.get("type") in ("host_dispatch_group", "dispatch_group") and row.get("key"):
            total = float(row.get("total_ns") or 0.0)
            times[str(row["key"])] = times.get(str(row["key"]), 0.0) + total / calls / 1e6
    return times


def line_costs(dispatches: list[Dispatch]) -> list[dict[str, Any]]:
    """Each user line's cost per call (ms) and share of the timed dispatches' total, most
    costly first: a dispatch's time split evenly among its lines."""
    timed = [d for d in dispatches if d.time_ms is not None]
    total = sum(d.time_ms or 0.0 for d in timed)
    cost: dict[tuple[str, int], float] = {}
    for d in timed:
        if not d.lines:
            continue
        part = (d.time_ms or 0.0) / len(d.lines)
        for frame in d.lines:
            cost[frame] = cost.get(frame, 0.0) + part
    rows = [{"file": f, "line": n, "ms": round(ms, 6),
             "share": round(ms / total, 4) if total > 0 else 0.0}
            for (f, n), ms in cost.items()]
    return sorted(rows, key=lambda r: (-r["ms"], r["file"], r["line"]))


__all__ = ["Speed", "line_costs", "profile_calls", "profile_dispatches", "time_module"]

"""Figure 14: repeated blocks traced once (`stitchBlocks`), against every layer inline.

Models: the Llama file of figure 9 at Llama-2-7B's and Llama-2-70B's shapes (32 and 80
decoder layers; built without weights), the same file at the 70 B width with 8 layers, the
20-layer LM of the other figures, and the `transformers` zoo of figure 8.

- Big shapes, each way (`stitchBlocks` true and false): a fresh server (diagnostics off, so one
  target per lowering; a 600 s time-out); the first lowering to Linalg (the worker's first, its
  block traced), then timed edits to IR (a trailing comment: the module's caches miss, the
  traced block is re-used; three stitched, one inline; the median); the worker's peak RSS over
  its life; the Linalg IR's lines.
- Depth: the 80-layer and the 8-layer file of the same width, each on a stitched server of
  its own, edited in turns (7 rounds, the order swapped each round, so that a busy moment
  of the machine falls on both): the median of the rounds' ratios; and the ratio of their
  first lowerings.
- Restart: the 70 B shape on a fresh server (warmed on the MLP) with an empty persistent cache
  folder (its first lowering traces the block), then on another fresh server after an edit
  to the parent (the answer misses; the block is read from the folder): both first
  lowerings, and their ratio.
- Block edits: the 70 B shape's block `forward` edited on one stitched server, in turns, so
  that no line moves (the parent's export re-used) or that a comment line is added to the
  block (exported again);
  each traces the block again; both medians and their ratio.
- Zoo: every wrapper of figure 8 verified (`torchMlirLens/verify`: Linalg on LLVM against
  eager) on a stitched server and on an inline one; how many verify each way and how many of
  them were stitched (their Linalg result has block functions).
- First hover on a first open: a fresh server per way (default settings) warmed on the MLP
  example, then the 20-layer LM opened and a line of `TransformerLM.forward` hovered until
  the hover shows IR; time from the open.

Targets: the 70 B shape lowers to Linalg (edit to IR) in ≤ 5 s stitched; 80 / 8 layers ≤ 1.5
(edit); the stitched 70 B Linalg IR ≤ 1500 lines; every zoo model verifies stitched where it
verifies inline; the LM's first hover ≤ 2 s stitched. The rest is information.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from pathlib import Path
from typing import Any

from tests.harness.lsp_session import hover_text

from bench.context import BenchError, Context, bump, check_lower, worker_pid
from bench.figures.fig2_hover import forward_lines
from bench.figures.fig8_zoo import ZOO, zoo_models
from bench.lsp_client import LensClient, peak_rss_mb
from bench.models import BenchModel, _write, example, lm20
from bench.report import FigureResult, Metric, metric_from_samples
from bench.scale_models import BIG_SHAPES, _model, big_models, llama_shape_source
from bench.stats import median

NUMBER = 14
NAME = "blocks"
TITLE = "Repeated blocks traced once"
TIMEOUT_S = 3600.0  # the inline 70 B shape alone takes minutes on a busy machine
IN_SMOKE = False
TARGET_70B_S = 5.0
TARGET_DEPTH_RATIO = 1.5
TARGET_70B_IR_LINES = 1500.0
TARGET_HOVER_S = 2.0
WAYS = {"stitched": True, "inline": False}
DEPTH_ROUNDS = 7  # edits of each depth, in turns


def _shallow(work: Path) -> BenchModel:
    """The 70 B width with 8 layers (the depth ratio's short model)."""
    d, _layers, heads, kv, ff = BIG_SHAPES["llama70b"]
    path = _write(work / "llama70b_8layers.py", llama_shape_source(d, 8, heads, kv, ff))
    return _model("llama70b_8layers", path, "LlamaLM")


async def _lower_twice(ctx: Context, model: BenchModel, stitch: bool, tag: str,
                       edits: int = 1) -> dict[str, Any]:
    """First lowering and `edits` timed edits to Linalg on a fresh server (the median);
    peak RSS; IR lines."""
    settings = {"diagnostics": "off", "timeoutSeconds": 600, "stitchBlocks": stitch}
    client = await ctx.new_server(f"server-fig14-{model.name}-{tag}", settings)
    try:
        with contextlib.suppress(Exception):
            await client.server_info()
        original = model.path.read_text()
        uri = client.open(model.path, original)
        res, first = await client.lower(uri, model.module, "linalg")
        check_lower(res, f"{model.name} first")
        times = []
        for k in range(edits):
            client.change(uri, bump(original, k + 1))
            res, seconds = await client.lower(uri, model.module, "linalg")
            res = check_lower(res, f"{model.name} edit")
            times.append(seconds)
        edit = median(times)
        stats = res.get("stats") or {}
        info: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            info = await client.server_info()
        pid = worker_pid(client, info)
        if pid is None:
            raise BenchError("no worker process found")
        client.close(uri)
        return {"first": first, "edit": edit, "edits": [round(t, 3) for t in times],
                "peak": peak_rss_mb(pid),
                "ir_lines": len(str(res.get("ir") or "").splitlines()),
                "blocks": stats.get("blocks"), "note": stats.get("blocksNote"),
                "phases": {k: round(float(v), 2) for k, v in (res.get("timings") or {}).items()},
                "block_seconds": stats.get("blocksSeconds")}
    finally:
        await ctx.stop_server(client)


async def _big_shapes(ctx: Context, result: FigureResult) -> dict[str, dict[str, Any]]:
    measured: dict[str, dict[str, Any]] = {}
    for model in big_models(ctx.work):
        for way, stitch in WAYS.items():
            key = f"{model.name} {way}"
            try:
                measured[key] = out = await _lower_twice(ctx, model, stitch, way,
                                                         edits=3 if stitch else 1)
            except Exception as exc:  # one failure must not hide the others
                result.details[f"{key} error"] = f"{type(exc).__name__}: {exc}"[:500]
                continue
            target = TARGET_70B_S if (model.name, way) == ("llama70b", "stitched") else None
            lines = TARGET_70B_IR_LINES if (model.name, way) == ("llama70b", "stitched") \
                else None
            result.metrics += [
                Metric(f"{key}: edit to Linalg IR", out["edit"], "s", target),
                Metric(f"{key}: first lowering (worker's first)", out["first"], "s", None),
                Metric(f"{key}: worker peak RSS", out["peak"], "MB", None),
                Metric(f"{key}: Linalg IR lines", float(out["ir_lines"]), "lines", lines),
            ]
            result.details[key] = {k: v for k, v in out.items()
                                   if k not in ("first", "edit", "peak", "ir_lines")}
    return measured


async def _depth(ctx: Context, result: FigureResult) -> None:
    """The 8-layer and the 80-layer file, each on its own stitched server, edited in turns
    (the order swapped each round) so that both see the same machine: the ratio of each
    round's two edits, and its median."""
    deep = next(m for m in big_models(ctx.work) if m.name == "llama70b")
    models = {"shallow": _shallow(ctx.work), "deep": deep}
    settings = {"diagnostics": "off", "timeoutSeconds": 600, "stitchBlocks": True}
    clients: dict[str, LensClient] = {}
    try:
        firsts: dict[str, float] = {}
        uris: dict[str, str] = {}
        for way, model in models.items():
            clients[way] = client = await ctx.new_server(f"server-fig14-depth-{way}", settings)
            uris[way] = client.open(model.path, model.path.read_text())
            res, firsts[way] = await client.lower(uris[way], model.module, "linalg")
            check_lower(res, f"{model.name} first")
        edits: dict[str, list[float]] = {"shallow": [], "deep": []}
        for k in range(DEPTH_ROUNDS):
            order = ("shallow", "deep") if k % 2 == 0 else ("deep", "shallow")
            for way in order:
                model = models[way]
                clients[way].change(uris[way], bump(model.path.read_text(), k + 1))
                res, seconds = await clients[way].lower(uris[way], model.module, "linalg")
                check_lower(res, f"{model.name} edit")
                edits[way].append(seconds)
    finally:
        for client in clients.values():
            await ctx.stop_server(client)
    ratios = [d / s for d, s in zip(edits["deep"], edits["shallow"], strict=True)]
    result.details["depth edits"] = {way: [round(t, 3) for t in times]
                                     for way, times in edits.items()}
    result.metrics += [
        metric_from_samples("8 layers (70 B width) stitched: edit to Linalg IR",
                            edits["shallow"], "s", None),
        metric_from_samples("80 layers (70 B width) stitched: edit to Linalg IR",
                            edits["deep"], "s", None),
        metric_from_samples("80 / 8 layers, stitched: edit to IR (paired rounds)", ratios,
                            "x", TARGET_DEPTH_RATIO),
        Metric("80 / 8 layers, stitched: first lowering", firsts["deep"] / firsts["shallow"],
               "x", None),
    ]


async def _restarted(ctx: Context, result: FigureResult) -> None:
    """The 70 B shape's first lowering on a fresh server with a persistent cache folder:
    first with the folder empty (the block traced), then on another fresh server after an
    edit to the parent (its answer misses; the block is read from the folder)."""
    model = next(m for m in big_models(ctx.work) if m.name == "llama70b")
    cache = ctx.work / "fig14-cache"
    shutil.rmtree(cache, ignore_errors=True)
    settings = {"diagnostics": "off", "timeoutSeconds": 600, "stitchBlocks": True}
    seconds: dict[str, float] = {}
    for k, way in enumerate(("traced", "stored")):
        client = await ctx.new_server(f"server-fig14-restart-{way}", settings,
                                      env={"TORCH_MLIR_LENS_CACHE_DIR": str(cache)})
        try:
            await _warm(ctx, client)  # the worker's start-up is not the block's
            uri = client.open(model.path, bump(model.path.read_text(), k))
            res, seconds[way] = await client.lower(uri, model.module, "linalg")
            res = check_lower(res, f"{model.name} {way}")
            sources = [b.get("source") for b in (res.get("stats") or {}).get("blocks") or []]
            if sources != [way]:
                raise BenchError(f"the block was {sources}, not {way}")
        finally:
            await ctx.stop_server(client)
    result.metrics += [
        Metric("70 B shape, a fresh server's first lowering: block traced", seconds["traced"],
               "s", None),
        Metric("70 B shape, a fresh server's first lowering after an edit to the parent: "
               "block read from the persistent cache", seconds["stored"], "s", None),
        Metric("block read / block traced (first lowering)",
               seconds["stored"] / seconds["traced"], "x", None),
    ]


BLOCK_LINE = "return x + self.mlp(self.mlp_norm(x))"


async def _block_edits(ctx: Context, result: FigureResult) -> None:
    """Edits to the 70 B shape's block `forward` on one stitched server, in turns: one that
    moves no line (the parent's export is re-used) and one that also adds a comment line to
    the block (the parent's lines move: it is exported again). Both trace the block again."""
    model = next(m for m in big_models(ctx.work) if m.name == "llama70b")
    original = model.path.read_text()
    if BLOCK_LINE not in original:
        raise BenchError("the block's line to edit is not in the model")
    settings = {"diagnostics": "off", "timeoutSeconds": 600, "stitchBlocks": True}
    client = await ctx.new_server("server-fig14-block-edits", settings)
    seconds: dict[str, list[float]] = {"reused": [], "exported": []}
    try:
        uri = client.open(model.path, original)
        check_lower((await client.lower(uri, model.module, "linalg"))[0], "first")
        for k in range(DEPTH_ROUNDS):
            for way in (("reused", "exported") if k % 2 else ("exported", "reused")):
                op = "-" if len(seconds[way]) % 2 == 0 else "*"
                edit = BLOCK_LINE.replace("x + self", f"x {op} self") + f"  # {way} {k}"
                if way == "exported":  # one more line in the block, other each time
                    edit += f"\n    # a line added to the block ({k})"
                client.change(uri, original.replace(BLOCK_LINE, edit))
                res, took = await client.lower(uri, model.module, "linalg")
                stats = check_lower(res, f"block edit {way}").get("stats") or {}
                if stats.get("blocksParent", stats.get("blocks_parent")) != way:
                    raise BenchError(f"the parent was not {way}: {stats}")
                seconds[way].append(took)
    finally:
        await ctx.stop_server(client)
    result.metrics += [
        metric_from_samples("70 B shape, edit to the block's forward → IR, parent re-used",
                            seconds["reused"], "s", None),
        metric_from_samples("70 B shape, edit to the block's forward → IR, a line added "
                            "(parent exported again)", seconds["exported"], "s", None),
        Metric("block edit: parent re-used / exported again",
               median(seconds["reused"]) / median(seconds["exported"]), "x", None),
    ]


async def _zoo(ctx: Context, result: FigureResult) -> None:
    outcomes: dict[str, dict[str, Any]] = {}
    # A copy in the servers' (trusted) workspace: the zoo's own folder is not theirs.
    copy = _write(ctx.work / "hf_zoo.py", ZOO.read_text())
    zoo = [BenchModel(m.name, copy, m.module, m.inputs) for m in zoo_models(ctx.config.smoke)]
    for way, stitch in WAYS.items():
        settings = {"diagnostics": "off", "timeoutSeconds": 300, "stitchBlocks": stitch}
        client = await ctx.new_server(f"server-fig14-zoo-{way}", settings)
        try:
            uri = client.open(copy)
            for model in zoo:
                row = outcomes.setdefault(model.name, {})
                lowered, _ = await client.lower(uri, model.module, "linalg")
                blocks = ((lowered or {}).get("stats") or {}).get("blocks") or []
                res, seconds = await client.request(
                    "torchMlirLens/verify", {"uri": uri, "module": model.module})
                row[way] = {"ok": bool((res or {}).get("ok")),
                            "max_abs_err": (res or {}).get("maxAbsErr"),
                            "message": str((res or {}).get("message") or "")[:160],
                            "functions": [b.get("function") for b in blocks],
                            "seconds": round(seconds, 2)}
            client.close(uri)
        finally:
            await ctx.stop_server(client)
    both = [n for n, r in outcomes.items() if r.get("inline", {}).get("ok")]
    worse = [n for n in both if not outcomes[n].get("stitched", {}).get("ok")]
    stitched = [n for n, r in outcomes.items() if r.get("stitched", {}).get("functions")]
    result.metrics += [
        Metric("zoo: verify fails stitched where it passes inline", float(len(worse)), "count",
               0.0, "<=", note=", ".join(worse)),
        Metric("zoo: models verified inline", float(len(both)), "count", None,
               note=f"of {len(outcomes)}"),
        Metric("zoo: models with stitched blocks", float(len(stitched)), "count", None,
               note=", ".join(stitched)),
    ]
    result.details["zoo verify"] = outcomes


async def _warm(ctx: Context, client: LensClient) -> None:
    """A fresh server's worker started and warm: the MLP example lowered, the server idle."""
    given = example("mlp", ctx.work)  # a copy in the server's (trusted) workspace
    mlp = BenchModel(given.name, _write(ctx.work / "mlp_warm.py", given.path.read_text()),
                     given.module, given.inputs)
    # A text of its own: a persistent cache must not answer it (the worker would stay cold).
    warm_uri = client.open(mlp.path, bump(mlp.path.read_text(), 0))
    check_lower((await client.lower(warm_uri, mlp.module, "linalg"))[0], "warm-up")
    await client.wait_idle()
    client.close(warm_uri)


async def _first_hover(ctx: Context, stitch: bool, way: str) -> float:
    """Open → hover with IR on the LM's forward, on a fresh server warmed on the MLP."""
    client = await ctx.new_server(f"server-fig14-hover-{way}", {"stitchBlocks": stitch})
    try:
        await _warm(ctx, client)
        model = lm20(ctx.work)
        source = model.path.read_text().splitlines()
        line, col = next((ln, c) for ln, c in forward_lines(model.path, {model.module})
                         if "block" in source[ln])  # the line calling the layers
        return await _hover_after_open(client, model, line, col)
    finally:
        await ctx.stop_server(client)


async def _hover_after_open(client: LensClient, model: BenchModel, line: int,
                            col: int) -> float:
    t0 = time.perf_counter()
    uri = client.open(model.path)
    deadline = t0 + 300
    while True:
        hov, _ = await client.hover(uri, line, col)
        if "mlir" in hover_text(hov):
            return time.perf_counter() - t0
        if time.perf_counter() > deadline:
            raise TimeoutError("no hover with IR within 300 s")
        await asyncio.sleep(0.05)


async def _part(result: FigureResult, name: str, work: Any) -> Any:
    """Run one part of the figure; a failure is recorded, the other parts still run."""
    try:
        return await work
    except Exception as exc:
        result.details[f"{name} error"] = f"{type(exc).__name__}: {exc}"[:500]
        return None


async def run(ctx: Context) -> FigureResult:
    """Big shapes both ways, the depth ratio, the zoo's Verify, the LM's first hover."""
    result = FigureResult(NUMBER, TITLE)
    await _big_shapes(ctx, result)
    await _part(result, "depth", _depth(ctx, result))
    await _part(result, "restart", _restarted(ctx, result))
    await _part(result, "block edits", _block_edits(ctx, result))
    await _part(result, "zoo", _zoo(ctx, result))
    hovers: dict[str, list[float]] = {}
    for _ in range(1 if ctx.config.quick else 2):
        for way, stitch in WAYS.items():
            seconds = await _part(result, f"hover {way}", _first_hover(ctx, stitch, way))
            if seconds is not None:
                hovers.setdefault(way, []).append(seconds)
    for way, samples in hovers.items():
        result.metrics.append(metric_from_samples(
            f"20-layer LM, first hover on a first open ({way})", samples, "s",
            TARGET_HOVER_S if way == "stitched" else None))
    if hovers.get("stitched") and hovers.get("inline"):
        result.metrics.append(Metric("first hover: inline / stitched",
                                     median(hovers["inline"]) / median(hovers["stitched"]),
                                     "x", None))
    return result

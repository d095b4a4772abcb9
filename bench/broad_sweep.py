"""The broad real-model sweep: every architecture of `tests/models/broad_zoo.py` through
torch.export, plain torch-mlir and the product, on each backend.

    python -m bench.broad_sweep [--only TYPE,...] [--rows FILE] [--resume] [--rewrites]
                                [--product-only]

For each architecture, one after another:

1. torch.export: `torch.export.export(ZooModel(type), zoo_inputs(type))` in a warm plain
   process (`bench/baseline_worker.py`); an architecture `broad_zoo` cannot build is recorded
   with its reason and skipped;
2. plain torch-mlir: `fx.export_and_import(program, output_type=...)` per backend in that
   process, on the program of step 1 (a crash of torch-mlir ends it: recorded, and a new one is
   started);
3. the product: one `Engine.lower` of `ZooModel` with the three backends as targets, as the
   editor's check does (one export); a worker crash, time-out or memory-limit error is recorded
   as such. It runs beside step 2 (separate processes);
4. precision, where the product named culprits: each culprit op lowered alone with its types
   (`bench/culprit_precision.py`, in a third process): a culprit that lowers alone is a
   false one.

With `--rewrites`, each backend the product does not lower gets the proven rewrites (the
engine's `rewrites` job), then the module lowered through every one (`rewrites=auto`) and,
when it lowers, Verify on that backend's IR (figure 15, bench/rewrites_figure.py).

Rows are appended to a JSON-lines file as they come (`--resume` skips the types already there),
so an interrupted sweep loses nothing. Figure 13 summarizes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.baseline import BaselineProcess
from bench.models import BenchModel

REPO = Path(__file__).resolve().parent.parent
ZOO = REPO / "tests" / "models" / "broad_zoo.py"
BACKENDS = {"linalg": "linalg-on-tensors", "tosa": "tosa", "stablehlo": "stablehlo"}
STEP_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Corpus:
    """A models file the sweep runs: its path, the user's module class (built from the
    model's name) and the function giving a model's inputs."""

    path: Path
    cls: str
    inputs: str


BROAD = Corpus(ZOO, "ZooModel", "zoo_inputs")
ENGINE_FRESH_EVERY = 60  # architectures per worker: the imported model code piles up
NOT_BUILT = "NotBuilt"


@dataclass
class Row:
    """What happened to one architecture."""

    type: str
    built: bool = False
    why_not_built: str = ""
    exported: bool = False
    export_error: str = ""
    plain: dict[str, dict[str, Any]] = field(default_factory=dict)  # backend → ok, error
    product: dict[str, dict[str, Any]] = field(default_factory=dict)  # backend → ok, culprits
    # backend → [{op, file, line, lowers_alone, message}]: each culprit op checked alone
    precision: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # backend → the proven rewrites and the module lowered and verified through them
    rewrites: dict[str, dict[str, Any]] = field(default_factory=dict)
    precision_error: str = ""  # why the check has no answer (it crashed: op_isolation runs
    #                            culprits that crash torch-mlir in its own process)
    worker_crashes: int = 0  # jobs answered "the worker crashed"
    worker_restarts: int = 0  # workers lost (a torch-mlir pass crash answered on the next)
    seconds: dict[str, float] = field(default_factory=dict)


def _first_line(text: str, limit: int = 200) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:limit]


def architectures(python: str = sys.executable, corpus: Corpus = BROAD) -> list[str]:
    """Every type of the corpus (asked of a fresh interpreter: listing imports transformers)."""
    code = (f"import json, sys; sys.path.insert(0, sys.argv[1]); import {corpus.path.stem} as z; "
            "print(json.dumps(z.architectures()))")
    out = subprocess.run([python, "-c", code, str(corpus.path.parent)], capture_output=True,
                         text=True, check=True, timeout=300).stdout
    return list(json.loads(out.strip().splitlines()[-1]))


def bench_model(model_type: str, corpus: Corpus = BROAD) -> BenchModel:
    """The corpus entry as the benchmark's baseline process takes it."""
    return BenchModel(model_type, corpus.path, corpus.cls, f"{corpus.inputs}({model_type!r})",
                      f"({model_type!r},)")


def module_job(model_type: str, corpus: Corpus = BROAD) -> Any:
    """The product's job for one architecture: ZooModel(type) on its example inputs."""
    from torch_mlir_lens.engine import ModuleJob

    return ModuleJob(path=str(corpus.path), module=corpus.cls, init=f"({model_type!r},)",
                     inputs=f"{corpus.inputs}({model_type!r})")


class Plain:
    """A warm `bench/baseline_worker.py` process, restarted when torch-mlir takes it down:
    plain torch-mlir, or (a second one) the precision check."""

    def __init__(self, python: str, log: Path | None) -> None:
        self.python, self.log = python, log
        self.proc: BaselineProcess | None = None

    async def call(self, op: str, model: BenchModel, output_type: str = "",
                   missed: bool = False) -> dict[str, Any]:
        """The reply to one request; {"ok": False, "crashed": True, ...} if the process died."""
        if self.proc is None:
            self.proc = BaselineProcess(self.python, self.log)
            await self.proc.start()
        try:
            if op == "export":
                return await self.proc.export(model, STEP_TIMEOUT_S, check=False)
            if op == "precision":
                return await self.proc.precision(model, 2 * STEP_TIMEOUT_S, check=False,
                                                 missed=missed)
            return await self.proc.lower(model, output_type, timeout=STEP_TIMEOUT_S,
                                         check=False, exported=True)
        except (RuntimeError, TimeoutError, OSError, json.JSONDecodeError) as exc:
            await self.stop()
            return {"ok": False, "crashed": True, "error": f"{type(exc).__name__}: {exc}"}

    async def stop(self) -> None:
        if self.proc is not None:
            proc, self.proc = self.proc, None
            await proc.stop()


def _culprits(result: Any) -> list[dict[str, Any]]:
    return [{"op": d.op, "file": d.file, "line": d.line, "cause": d.cause or d.message[:160],
             "message": d.message[:2000],
             "kind": str(d.kind), "ops": list(d.ops or []), "reason": d.reason,
             "related": [f"{r.file}:{r.line}" for r in (d.related or [])]}
            for d in result.diagnostics if d.severity == "error"]


async def _product(engine: Any, model_type: str, row: Row, corpus: Corpus = BROAD) -> None:
    from torch_mlir_lens.protocol.results import LensError

    start = time.perf_counter()
    restarts = engine.restarts
    try:
        results = await engine.lower(module_job(model_type, corpus), targets=list(BACKENDS))
    except LensError as err:
        if err.kind == "cancelled":  # the sweep itself is being stopped (Ctrl-C)
            raise asyncio.CancelledError from err
        crashed = err.kind == "worker-crash"
        row.worker_crashes += int(crashed)
        for backend in BACKENDS:
            row.product[backend] = {"ok": False, "error": _first_line(err.message),
                                    "kind": str(err.kind), "culprits": []}
        row.seconds["product"] = round(time.perf_counter() - start, 2)
        row.worker_restarts = engine.restarts - restarts
        return
    row.worker_restarts = engine.restarts - restarts
    for res in results:
        first = res.diagnostics[0].message if res.diagnostics else ""
        row.product[res.target] = {"ok": bool(res.ok), "partial": bool(res.partial),
                                   "error": "" if res.ok else _first_line(first),
                                   "culprits": [] if res.ok else _culprits(res)}
    row.seconds["product"] = round(time.perf_counter() - start, 2)


async def _precision(checker: Plain, model: BenchModel, row: Row,
                     missed: bool = False) -> None:
    if all(p.get("ok") or not p.get("culprits") for p in row.product.values()):
        return  # no culprit to check
    start = time.perf_counter()
    reply = await checker.call("precision", model, missed=missed)
    row.seconds["precision"] = round(time.perf_counter() - start, 2)
    if not reply.get("ok"):
        row.precision_error = _first_line(str(reply.get("error") or "no answer"))
    for backend, checks in (reply.get("checks") or {}).items():
        row.precision[backend] = [
            {k: c.get(k) for k in ("op", "file", "line", "lowers_alone", "message", "named")}
            for c in checks]


async def _past_export(engine: Any, model_type: str, row: Row, corpus: Corpus) -> None:
    """An export refusal the product offers a proven pin for: the module lowered again with
    `--rewrites auto`, the backends it then lowers on recorded (`rewrites["export"]`)."""
    from dataclasses import replace

    from torch_mlir_lens.protocol.results import LensError

    offered = any("a proven way past it" in c.get("cause", "") + c.get("message", "")
                  for p in row.product.values() for c in p.get("culprits", [])
                  if c.get("kind") == "export-error")
    if not offered:
        return
    start = time.perf_counter()
    job = replace(module_job(model_type, corpus), rewrites=["auto"])
    try:
        results = await engine.lower(job, targets=list(BACKENDS))
    except LensError as err:
        row.rewrites["export"] = {"error": _first_line(err.message)}
        return
    row.rewrites["export"] = {
        "rewrites": sorted({n for r in results for n in (r.rewrites or [])}),
        "lowered": [r.target for r in results if r.ok]}
    row.seconds["past_export"] = round(time.perf_counter() - start, 2)


async def _rewrites(engine: Any, model_type: str, row: Row, corpus: Corpus = BROAD) -> None:
    from bench.rewrites_figure import engine_outcome

    for backend, result in row.product.items():
        if not result.get("ok") and result.get("culprits"):
            start = time.perf_counter()
            row.rewrites[backend] = await engine_outcome(engine,
                                                         module_job(model_type, corpus),
                                                         backend)
            row.seconds[f"rewrites_{backend}"] = round(time.perf_counter() - start, 2)


async def sweep_one(model_type: str, plain: Plain, engine: Any,
                    checker: Plain | None = None, rewrites: bool = False,
                    compare: bool = True, corpus: Corpus = BROAD) -> Row:
    """One architecture through export, plain torch-mlir and the product."""
    row = Row(model_type)
    model = bench_model(model_type, corpus)
    reply = await plain.call("export", model)
    error = str(reply.get("error") or "")
    if not reply.get("ok") and error.startswith(NOT_BUILT):
        row.why_not_built = _first_line(error.removeprefix(f"{NOT_BUILT}: "))
        return row
    row.built = True
    row.exported = bool(reply.get("ok"))
    row.export_error = "" if row.exported else _first_line(error)
    row.seconds["export"] = round(float(reply.get("seconds") or 0.0), 2)
    if compare:  # plain torch-mlir beside the product
        await asyncio.gather(_plain(plain, model, row),
                             _product(engine, model_type, row, corpus))
    else:
        await _product(engine, model_type, row, corpus)
    if corpus is not BROAD:
        await _past_export(engine, model_type, row, corpus)
    if checker is not None and compare:
        await _precision(checker, model, row, missed=corpus is not BROAD)
    if rewrites:
        await _rewrites(engine, model_type, row, corpus)
    return row


async def _plain(plain: Plain, model: BenchModel, row: Row) -> None:
    for backend, output_type in BACKENDS.items():
        if not row.exported:
            row.plain[backend] = {"ok": False, "error": "torch.export fails"}
            continue
        reply = await plain.call("lower", model, output_type)
        row.plain[backend] = {"ok": bool(reply.get("ok")),
                              "error": _first_line(str(reply.get("error") or "")),
                              "crashed": bool(reply.get("crashed"))}
        row.seconds[f"plain_{backend}"] = round(float(reply.get("seconds") or 0.0), 2)


def read_rows(path: Path) -> list[Row]:
    """The rows of a JSON-lines file (the last row of a type wins)."""
    if not path.exists():
        return []
    rows: dict[str, Row] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            data = json.loads(line)
            rows[data["type"]] = Row(**data)
    return list(rows.values())


async def sweep(types: list[str], rows_path: Path, *, python: str = sys.executable,
                log: Path | None = None, resume: bool = False,
                rewrites: bool = False, compare: bool = True,
                corpus: Corpus = BROAD) -> list[Row]:
    """Every type of `types` (skipping those in `rows_path` with `resume`); all rows.
    `compare` False: the product alone (and its rewrites), without plain torch-mlir and the
    precision check (figure 15 needs neither)."""
    from torch_mlir_lens.engine import Engine, EngineConfig

    done = {r.type for r in read_rows(rows_path)} if resume else set()
    if not resume and rows_path.exists():
        rows_path.unlink()
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    plain = Plain(python, log)
    checker = Plain(python, log)
    engine: Any = None
    try:
        for k, model_type in enumerate(t for t in types if t not in done):
            if engine is None or k % ENGINE_FRESH_EVERY == 0:
                if engine is not None:
                    await engine.stop()
                engine = Engine(EngineConfig(python=python, timeout_s=STEP_TIMEOUT_S))
                await engine.start()
            started = time.perf_counter()
            row = await sweep_one(model_type, plain, engine, checker, rewrites, compare,
                                  corpus)
            row.seconds["total"] = round(time.perf_counter() - started, 2)
            with rows_path.open("a") as f:
                f.write(json.dumps(asdict(row)) + "\n")
            print(f"[broad] {model_type}: built={row.built} exported={row.exported} "
                  f"plain={[b for b, r in row.plain.items() if r['ok']]} "
                  f"product={[b for b, r in row.product.items() if r['ok']]} "
                  f"crashes={row.worker_crashes} restarts={row.worker_restarts} "
                  f"{row.seconds['total']:.1f}s",
                  file=sys.stderr, flush=True)
    finally:
        await plain.stop()
        await checker.stop()
        if engine is not None:
            await engine.stop()
    return [r for r in read_rows(rows_path) if r.type in set(types)]


def main(argv: list[str] | None = None) -> int:
    """Run the sweep from the command line (rows only; figure 13 makes the tables)."""
    ap = argparse.ArgumentParser(prog="python -m bench.broad_sweep", description=__doc__)
    ap.add_argument("--only", help="comma-separated architectures (default: all)")
    ap.add_argument("--rows", type=Path, default=REPO / "bench" / ".work" / "broad_rows.jsonl")
    ap.add_argument("--resume", action="store_true", help="skip the types already in --rows")
    ap.add_argument("--rewrites", action="store_true",
                    help="prove rewrites where the product fails (figure 15)")
    ap.add_argument("--product-only", action="store_true",
                    help="no plain torch-mlir and no precision check beside the product")
    args = ap.parse_args(argv)
    types = args.only.split(",") if args.only else architectures()
    asyncio.run(sweep(types, args.rows, resume=args.resume, rewrites=args.rewrites,
                      compare=not args.product_only,
                      log=args.rows.with_suffix(".baseline.log")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

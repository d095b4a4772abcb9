"""`python -m bench.run [--quick] [--smoke] [--only NAME,...] [--fresh] [--out DIR]`.

Runs the figures of issue 5 one after another (each side by side with its baseline), prints
the table (median, spread, target, verdict) and merges them into results.json and RESULTS.md:
figures not run keep their last results, with the run they come from (`--fresh`: only this
run's figures).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import traceback
from pathlib import Path

from bench.context import Config, Context
from bench.figures import FIGURES
from bench.models import WORK
from bench.report import FigureResult, machine, text_table
from bench.results_file import write_results

BENCH_DIR = Path(__file__).resolve().parent
FIGURE_TIMEOUT_S = 900.0  # a hung server must not hang the whole run


def select(only: str | None, smoke: bool = False) -> list:
    """Figure modules named in `only` (numbers or names, comma-separated); all if None (in a
    smoke run, those not marked `IN_SMOKE = False`)."""
    if not only:
        return [f for f in FIGURES if not smoke or getattr(f, "IN_SMOKE", True)]
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    chosen = [f for f in FIGURES if str(f.NUMBER) in wanted or f.NAME in wanted]
    unknown = wanted - {str(f.NUMBER) for f in chosen} - {f.NAME for f in chosen}
    if unknown:
        names = ", ".join(f"{f.NUMBER}={f.NAME}" for f in FIGURES)
        raise SystemExit(f"unknown figure(s) {sorted(unknown)}; known: {names}")
    return chosen


async def run_figures(config: Config, figures: list) -> tuple[list[FigureResult], list[str]]:
    """Run each figure; a figure that raises is recorded as an error, the rest still run."""
    ctx = Context(config)
    results = []
    try:
        for fig in figures:
            print(f"[bench] figure {fig.NUMBER}: {fig.TITLE} ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            try:
                res = await asyncio.wait_for(fig.run(ctx),
                                             getattr(fig, "TIMEOUT_S", FIGURE_TIMEOUT_S))
            except Exception as exc:  # TimeoutError included: the other figures still run
                res = FigureResult(fig.NUMBER, fig.TITLE, error=f"{type(exc).__name__}: {exc}")
                res.details["traceback"] = traceback.format_exc(limit=6).strip().splitlines()[-6:]
            res.seconds = time.perf_counter() - t0
            res.method = fig.__doc__ or ""
            print(f"[bench]   {res.verdict} in {res.seconds:.1f} s", file=sys.stderr, flush=True)
            results.append(res)
    finally:
        await ctx.close()
    return results, ctx.notes


def main(argv: list[str] | None = None) -> int:
    """Entry point; exit code 0 even when a figure fails (the table says so)."""
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer repeats (debugging)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny models and 1-2 repeats: checks the harness, not the product")
    ap.add_argument("--only", help="comma-separated figure numbers or names")
    ap.add_argument("--models", help="figure 1 only for these models (mlp,cnn,block,lm20)")
    ap.add_argument("--out", type=Path, default=BENCH_DIR, help="where results files go")
    ap.add_argument("--work", type=Path, default=WORK, help="scratch directory")
    ap.add_argument("--note", action="append", default=[], help="a note for RESULTS.md")
    ap.add_argument("--fresh", action="store_true",
                    help="write only this run's figures (default: keep the other figures' "
                         "last results in the files)")
    args = ap.parse_args(argv)

    config = Config.make(quick=args.quick, smoke=args.smoke, work=args.work)
    if args.models:
        config.models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    figures = select(args.only, args.smoke)
    meta = {"machine": machine(config.python)}
    t0 = time.perf_counter()
    results, notes = asyncio.run(run_figures(config, figures))
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    given = list(argv if argv is not None else sys.argv[1:])
    hidden = ("--out", "--work", "--note")  # paths and prose: not part of the command shown
    shown = [a for i, a in enumerate(given) if a not in hidden
             and (i == 0 or given[i - 1] not in hidden)]
    cmd = " ".join(["python -m bench.run", *shown])
    meta.update({
        "mode": mode,
        "command": cmd,
        "total_seconds": round(time.perf_counter() - t0, 1),
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        "repeats": {k: v for k, v in vars(config).items() if isinstance(v, int)
                    and not isinstance(v, bool)},
    })
    args.out.mkdir(parents=True, exist_ok=True)
    standing = [
        "Servers, workers, the baseline and the cold script run without PYTHONDONTWRITEBYTECODE "
        "(set in some dev shells), as an installed package runs: with it every `serve` start "
        "recompiles the product's modules from source.",
        "Default settings unless a figure says otherwise: a lowering through the server is then "
        "the check shared with hover and diagnostics (linalg + tosa + stablehlo, one export).",
    ]
    jpath, mpath = write_results(results, args.out, meta, [*args.note, *notes, *standing],
                                 fresh=args.fresh, known={f.NUMBER for f in FIGURES})
    print()
    print(text_table(results))
    print(f"\n{mode} run in {meta['total_seconds']} s; wrote {jpath.name} and {mpath.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""torch-mlir's own e2e test suite through the product: does every lowering error name a
culprit at a line, and does the product lower everything plain torch-mlir lowers?

    python -m bench.e2e_suite --suite PATH [--every N] [--only REGEX] [--rows FILE] [--rewrites]

PATH is the `projects/pt1/python` folder of a torch-mlir source checkout (the suite is not in
the PyPI wheel). Each registered test's module is built, its `forward` inputs are taken from
the test's own invoker (stopped at its first call), and then:

1. the product: `export_program` + `ProgramLowerer` on Linalg, TOSA and StableHLO, as the
   worker lowers a module (static shapes: the examples' sizes);
2. plain torch-mlir, only where the product failed: `fx.export_and_import` on that backend.

With `--rewrites`, each failing pair also gets the product's proven rewrites and whether the
module, lowered with them, verifies (bench/rewrites_figure.py, figure 15).

Rows go to a JSON-lines file; the summary counts failing (test, backend) pairs, those with no
culprit, errors without a line, and failures where plain torch-mlir lowers. Tests run in child
processes of CHUNK tests each, so a hang or crash costs one chunk's time-out, not the run. A
test that kills its process (a torch-mlir pass segfaults) runs again as the product's worker
client runs a job again after such a crash: in a process whose passes run forked.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BACKENDS = {"linalg": "linalg-on-tensors", "tosa": "tosa", "stablehlo": "stablehlo"}
CHUNK = 300
CHUNK_TIMEOUT_S = 1800
TEST_TIMEOUT_S = 240  # the suite has a module whose forward never returns (TimeOutModule)
CRASHED = "crashed this process"  # also when run again with its passes forked
GUARD_PASSES_ENV = "TORCH_MLIR_LENS_GUARD_PASSES"  # as worker/ir/crash_guard.py reads it


def _stub_suite_imports() -> None:
    """What the suite's framework imports but a lowering does not need: the `multiprocess`
    package, torch-mlir's build-time `_version` and torchvision (its few vision tests fail
    to build and are counted as such)."""
    multiprocess = types.ModuleType("multiprocess")
    multiprocess.set_start_method = lambda *a, **k: None  # type: ignore[attr-defined]
    sys.modules.setdefault("multiprocess", multiprocess)
    version = types.ModuleType("torch_mlir._version")
    import torch
    from packaging.version import parse

    version.version = torch.__version__  # type: ignore[attr-defined]
    version.torch_version_for_comparison = (  # type: ignore[attr-defined]
        lambda: parse(torch.__version__.split("+")[0]))
    sys.modules.setdefault("torch_mlir._version", version)

    def missing(name: str) -> types.ModuleType:
        module = types.ModuleType(name)

        def absent(attr: str) -> Any:  # AttributeError: what hasattr() and inspect expect
            raise AttributeError(f"{name}.{attr}: torchvision is not installed")

        module.__getattr__ = absent  # type: ignore[method-assign]
        return module

    vision = missing("torchvision")
    vision.models, vision.ops = missing("torchvision.models"), missing("torchvision.ops")  # type: ignore[attr-defined]
    for name, module in (("torchvision", vision), ("torchvision.models", vision.models),
                         ("torchvision.ops", vision.ops)):
        sys.modules.setdefault(name, module)


class _FirstCall(Exception):
    pass


class _Recorder:
    """Stands for the module in a test's invoker: records its first call, then stops it."""

    def __init__(self) -> None:
        self.call: tuple[str, tuple[Any, ...], dict[str, Any]] | None = None

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.call = (name, args, kwargs)
            raise _FirstCall

        return record


def _plain_lowers(test: Any, args: tuple[Any, ...], kwargs: dict[str, Any], target: str) -> bool:
    """Whether plain torch-mlir lowers the test's module to `target`: in a forked child, as
    its passes can kill the process (int8 `mm` segfaults on Linalg), which counts as no."""
    import torch
    from torch_mlir import fx

    from torch_mlir_lens.worker.ir import crash_guard

    def lowers() -> bool:
        try:
            program = torch.export.export(test.program_factory(), args, kwargs)
            fx.export_and_import(program, output_type=BACKENDS[target])
        except Exception:
            return False
        return True

    try:
        return crash_guard.run_forked(lowers, step="plain torch-mlir")
    except crash_guard.Crash:
        return False


def _row(test: Any, rewrites: bool = False) -> dict[str, Any]:
    """One test through the product (and plain torch-mlir where the product fails); with
    `rewrites`, each failing backend's proven rewrites (bench/rewrites_figure.py)."""
    from torch_mlir_e2e_test.framework import TestUtils

    from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program

    row: dict[str, Any] = {"test": test.unique_name}
    module = test.program_factory()
    recorder = _Recorder()
    with contextlib.suppress(_FirstCall):
        test.program_invoker(recorder, TestUtils())
    if recorder.call is None or recorder.call[0] != "forward":
        row["skip"] = "does not call forward"
        return row
    _, args, kwargs = recorder.call
    source = os.path.abspath(inspect.getsourcefile(type(module)) or "")
    try:
        program = export_program(module, args, kwargs, user_files={source})
    except Exception as exc:
        row["skip"] = f"export: {str(exc).splitlines()[0][:160]}"
        return row
    lowerer = ProgramLowerer(program, module_name=type(module).__name__, user_files={source})
    for target in BACKENDS:
        result = lowerer.lower(target)
        errors = [d for d in result.diagnostics if d.severity == "error"]
        row[target] = {
            "ok": result.ok,
            "plain": None if result.ok or rewrites else _plain_lowers(test, args, kwargs,
                                                                       target),
            "errors": [{"kind": d.kind, "line": d.line, "cause": d.cause,
                        "message": d.message[:200]} for d in errors],
        }
        if rewrites and not result.ok:
            from bench.rewrites_figure import outcome

            try:
                row[target]["rewrites"] = outcome(lowerer, module, args, kwargs, target)
            except Exception as exc:  # the figure counts it as not fixed, with why
                row[target]["rewrites"] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return row


def run_chunk(suite: str, start: int, stop: int, every: int, only: str | None = None,
              rewrites: bool = False) -> None:
    """Print one JSON row per test of tests[start:stop:every] (sorted by name; with `only`,
    of the tests whose name it matches)."""
    import warnings

    warnings.filterwarnings("ignore")
    sys.path.insert(0, suite)
    _stub_suite_imports()
    import torch_mlir_e2e_test.test_suite as suite_module
    from torch_mlir_e2e_test.registry import GLOBAL_TEST_REGISTRY

    suite_module.register_all_tests()
    tests = sorted((t for t in GLOBAL_TEST_REGISTRY
                    if only is None or re.search(only, t.unique_name)),
                   key=lambda t: t.unique_name)[start:stop:every]

    def too_long(*_args: Any) -> None:
        raise TimeoutError(f"longer than {TEST_TIMEOUT_S} s")

    signal.signal(signal.SIGALRM, too_long)
    for test in tests:
        # A test that kills this process (torch-mlir segfaults in its passes here; the worker
        # runs it again with forked passes, as main() does) is left with this row alone.
        print(json.dumps({"test": test.unique_name, "skip": CRASHED}), flush=True)
        signal.alarm(TEST_TIMEOUT_S)
        try:
            row = _row(test, rewrites)
        except Exception as exc:  # the test's own module or inputs could not be built
            row = {"test": test.unique_name, "skip": f"build: {type(exc).__name__}: {exc}"[:200]}
        finally:
            signal.alarm(0)
        print(json.dumps(row), flush=True)


def _last_rows(lines: list[str]) -> list[dict[str, Any]]:
    """One row per test: its last (a test that crashed the process has only its first)."""
    rows: dict[str, dict[str, Any]] = {}
    for line in lines:
        if line:
            row = json.loads(line)
            rows[row["test"]] = row
    return list(rows.values())


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts the figure reports."""
    lowered = [r for r in rows if "skip" not in r]
    failing = [(r["test"], t, r[t]) for r in lowered for t in BACKENDS if not r[t]["ok"]]
    return {
        "tests": len(rows),
        "lowered": len(lowered),
        "skipped": dict(Counter(r["skip"].split(":")[0] for r in rows if "skip" in r)),
        "failing_pairs": len(failing),
        "no_culprit": [(name, t) for name, t, res in failing
                       if not any(e["kind"] == "unsupported-op" for e in res["errors"])],
        "errors_without_line": [(name, t) for name, t, res in failing
                                for e in res["errors"] if not e["line"]],
        "plain_lowers": [(name, t) for name, t, res in failing if res["plain"]],
    }


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.e2e_suite", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", required=True,
                    help="a torch-mlir checkout's projects/pt1/python folder")
    ap.add_argument("--every", type=int, default=1, help="every Nth test (default: all)")
    ap.add_argument("--only", metavar="REGEX", help="only the tests whose name matches")
    ap.add_argument("--rows", type=Path, default=REPO / "bench" / ".work" / "e2e_rows.jsonl")
    ap.add_argument("--rewrites", action="store_true",
                    help="prove rewrites for each failing pair (figure 15)")
    ap.add_argument("--chunk", help=argparse.SUPPRESS)  # "start:stop", in a child process
    args = ap.parse_args()
    if args.chunk:
        start, stop = map(int, args.chunk.split(":"))
        run_chunk(args.suite, start, stop, args.every, args.only, args.rewrites)
        return
    args.rows.parent.mkdir(parents=True, exist_ok=True)
    args.rows.write_text("")
    start, every = 0, args.every
    rows: list[dict[str, Any]] = []
    while True:  # chunk after chunk, until one finds no test left
        code = _run_chunk(args.suite, args.rows, f"{start}:{start + CHUNK}", every, args.only,
                          rewrites=args.rewrites)
        before = len(rows)
        rows = _last_rows(args.rows.read_text().splitlines())
        done = len(rows) - before
        print(f"[e2e] from test {start}: {done} tests, exit {code}", file=sys.stderr, flush=True)
        if done == 0:
            break
        # A chunk cut short by a crash goes on after the test that crashed.
        start = start + CHUNK if code == 0 else start + done * every
    for row in [r for r in rows if r.get("skip") == CRASHED]:
        print(f"[e2e] {row['test']} again, passes forked", file=sys.stderr, flush=True)
        _run_chunk(args.suite, args.rows, "0:1", 1, f"^{re.escape(row['test'])}$",
                   env={**os.environ, GUARD_PASSES_ENV: "1"}, rewrites=args.rewrites)
    rows = _last_rows(args.rows.read_text().splitlines())
    print(json.dumps(summary(rows), indent=1))
    if args.rewrites:
        from bench.rewrites_figure import summary as rewrites_summary

        print(json.dumps(rewrites_summary(rows), indent=1))


def _run_chunk(suite: str, rows: Path, span: str, every: int, only: str | None,
               env: dict[str, str] | None = None, rewrites: bool = False) -> int | str:
    """One child process running tests[span] (`--chunk`), its rows appended to `rows`: its
    exit code, or "timed out"."""
    with rows.open("a") as out:
        try:
            return subprocess.run(
                [sys.executable, "-m", "bench.e2e_suite", "--suite", suite,
                 "--every", str(every), "--chunk", span, *(["--only", only] if only else []),
                 *(["--rewrites"] if rewrites else [])],
                stdout=out, stderr=subprocess.DEVNULL, cwd=REPO, timeout=CHUNK_TIMEOUT_S,
                env=env, check=False).returncode
        except subprocess.TimeoutExpired:
            return "timed out"


if __name__ == "__main__":
    main()

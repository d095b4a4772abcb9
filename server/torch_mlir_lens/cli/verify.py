"""`torch-mlir-lens verify`: run the compiled module and compare it with eager PyTorch.

    torch-mlir-lens verify FILE [--module NAME | --line N] [--inputs EXPR | --inputs-file PATH]
                           [--init EXPR] [--rtol R] [--atol A] [--opt-level 0..3] [--json]
                           [--target linalg|tosa|stablehlo] [--rewrites LIST]

A module with dynamic dims (`# torch-mlir-lens: dynamic=...`) runs at several sizes of them,
each reported on its own line. Exit codes as the other commands: 0 matches (at every size);
1 differs, or the module does not export or lower; 2 bad input; 3 could not run: the worker
crashed, timed out or hit the memory limit (a JIT crash is a worker crash), or one of Verify's
own steps failed (a backend's IR it cannot convert to run, its LLVM lowering, the JIT, the
eager run): no verdict on the module. Like every command, this never
imports torch: the worker does the work.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from torch_mlir_lens.cli import iree_options
from torch_mlir_lens.cli.common import (
    EngineFactory,
    add_inputs,
    add_module_choice,
    display,
    load_source,
    make_engine,
    module_job,
    pick_module,
    running_engine,
    where_diagnostic,
)
from torch_mlir_lens.cli.parser import EXIT_FAILED, EXIT_NO_RUN, EXIT_OK
from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.protocol.verify_results import VerifyOutput, VerifyResult, dims_text
from torch_mlir_lens.rules.iree_targets import IREE_TARGETS
from torch_mlir_lens.rules.targets import BACKENDS

EXIT_MISMATCH = EXIT_FAILED


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text!r}")
    return value


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `verify` subcommand."""
    verify: argparse.ArgumentParser = sub.add_parser(
        "verify", help="run the compiled module and compare it with eager PyTorch"
    )
    verify.add_argument("file")
    add_module_choice(verify)
    add_inputs(verify)
    verify.add_argument("--rtol", type=_tolerance, metavar="R",
                        help="relative tolerance for float outputs (default per dtype)")
    verify.add_argument("--atol", type=_tolerance, metavar="A",
                        help="absolute tolerance for float outputs (default per dtype)")
    verify.add_argument("--opt-level", type=int, choices=range(4), default=0, metavar="N",
                        help="JIT optimisation level 0..3 (default 0: fastest feedback)")
    verify.add_argument("--target", choices=(*BACKENDS, *IREE_TARGETS), default="linalg",
                        help="the backend whose IR runs (TOSA's and StableHLO's converted to "
                             "Linalg; default linalg), or the IREE target whose compiled "
                             "module runs on IREE's runtime")
    verify.add_argument("--json", action="store_true", help="print the result as JSON")
    return verify


def exit_code(result: VerifyResult) -> int:
    """0 when every output matches; 3 when Verify's own steps could not run it (no verdict);
    1 otherwise (a mismatch, or the module does not export or lower)."""
    if result.ok:
        return EXIT_OK
    return EXIT_NO_RUN if result.kind == ErrorKind.VERIFY_ERROR else EXIT_MISMATCH


def _output_lines(outputs: list[VerifyOutput], indent: str) -> list[str]:
    lines = []
    for out in outputs:
        mark = "✓" if out.ok else "✗"
        shape = "x".join(str(d) for d in out.shape) or "scalar"
        lines.append(
            f"{indent}{mark} output {out.index}: {shape} {out.dtype}, "
            f"max abs err {out.max_abs_err}, max rel err {out.max_rel_err}"
            + ("" if out.ok else f", worst at {out.worst_index}")
        )
    return lines


def format_result(result: VerifyResult, path: str) -> str:
    """People's text: the verdict, then one line per output (per size of the dynamic dims,
    when it has some), then one per diagnostic."""
    lines = [f"{result.module}: {result.message}"]
    if not result.sizes:
        lines += _output_lines(result.outputs, "  ")
    for check in result.sizes:
        example = " (the example's)" if check.example else ""
        lines.append(f"  at {dims_text(check.dims)}{example}: {check.message}")
        lines += _output_lines(check.outputs, "    ")
    if result.speed:  # an IREE target's time against eager's
        lines.append(f"  time per call: {iree_options.speed_words(result.speed)}")
    for d in result.diagnostics:
        at = where_diagnostic(d) or display(path)
        op = f" [{d.op}]" if d.op and not d.cause else ""
        lines.append(f"{at}: {d.severity}: {d.message}{op}")
    return "\n".join(lines) + "\n"


async def run(args: argparse.Namespace, make_engine: EngineFactory = make_engine) -> int:
    """The `verify` command: one worker job, the verdict printed, the exit code returned (an
    ONNX model is compared with onnxruntime, on the test data beside it when there is some)."""
    src = load_source(args.file)
    module = pick_module(src, args.module, args.line)
    job = module_job(src, module, args)
    iree_options.require([args.target])
    async with running_engine(args, make_engine, src.path) as engine:
        backend = {"target": args.target} if args.target != "linalg" else {}
        result = await engine.verify(job, rtol=args.rtol, atol=args.atol,
                                     opt_level=args.opt_level or 0, **backend)
    if args.json:
        print(src.to_json(result.to_json()))
    else:
        sys.stdout.write(format_result(result, src.path))
    return exit_code(result)

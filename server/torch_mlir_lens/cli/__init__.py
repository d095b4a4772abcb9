"""`torch-mlir-lens`: lower, check and export PyTorch modules from the command line.

A stable contract (scripts depend on it):

    torch-mlir-lens lower FILE [--module NAME | --line N] [--target T | --pipeline STR]
                          [--inputs EXPR | --inputs-file PATH] [--init EXPR] [--annotate]
                          [--frames user|all] [--keep-weights] [--debug-info]
                          [--print-after-all] [--json]
    torch-mlir-lens check PATH… [--module NAME] [--targets linalg,tosa,stablehlo] [--inputs …]
                          [-j N] [--format text|json|sarif|github] [-o OUT] [--baseline FILE]
                          [--write-baseline] [--shard I/N] [--exclude PATTERN] [--json]
    torch-mlir-lens merge REPORT… [-o OUT] [--format F]
    torch-mlir-lens export FILE --module NAME [--target T] -o OUT [--bytecode]
    torch-mlir-lens verify FILE [--module NAME | --line N] [--rtol R] [--atol A] [--json]
    torch-mlir-lens serve [--tcp --host 127.0.0.1 --port N]

Exit codes: 0 done; 1 the module does not lower (unsupported ops, export or lowering errors);
2 bad input (missing file, syntax error, unknown module or target, bad inputs or pipeline);
3 the job could not run (the worker crashed, timed out or hit the memory limit).

The user's code runs in the worker process (the same one the language server uses), never in
this process, which does not import torch: a module that crashes cannot take the CLI down.

Layout: this module wires the parser and dispatches; `common.py` has what the commands share;
one module per command (`lower`, `check` → `check_file` or repo_check, `merge`, `export`,
`verify`, `serve`), each with `add_parser(sub)` and `run(args, make_engine)`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence

from torch_mlir_lens.cli import check, export, lower, merge, serve, verify
from torch_mlir_lens.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_NO_RUN,
    EXIT_OK,
    PROG,
    CliError,
    Parser,
    ended_by_signals,
    report_error,
)

__all__ = [
    "EXIT_BAD_INPUT", "EXIT_FAILED", "EXIT_NO_RUN", "EXIT_OK", "PROG", "CliError",
    "build_parser", "main",
]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `torch-mlir-lens` command."""
    parser = Parser(
        prog=PROG, description="See what a PyTorch nn.Module becomes in MLIR, line by line.",
        epilog="exit codes: 0 ok, 1 does not lower, 2 bad input, 3 worker crash/time-out/memory",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    lower.add_parser(sub)
    check.add_parser(sub)
    merge.add_parser(sub)
    export.add_parser(sub)
    verify.add_parser(sub)
    serve.add_parser(sub)
    return parser


_ASYNC_COMMANDS = {"lower": lower.run, "check": check.run, "export": export.run,
                   "verify": verify.run}


async def _until_a_signal(command: Callable[[argparse.Namespace], Awaitable[int]],
                          args: argparse.Namespace) -> int:
    """Run a command that uses workers; Ctrl-C, SIGTERM or SIGHUP end them and exit 128 + N."""
    async with ended_by_signals():
        return await command(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `torch-mlir-lens` command; returns the exit code (never raises, no traceback)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "serve":
            return serve.run(args)
        if args.command == "merge":
            return merge.run(args)
        return asyncio.run(_until_a_signal(_ASYNC_COMMANDS[args.command], args))
    except CliError as err:
        return report_error(err)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: still one line, and no traceback
        sys.stderr.write(f"{PROG}: error: internal error: {type(exc).__name__}: {exc}\n")
        return EXIT_NO_RUN

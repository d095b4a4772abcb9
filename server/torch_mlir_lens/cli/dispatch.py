"""The full command line: every subcommand's parser, the dispatch, one-line errors.

(`serve`, which editors start, does not come through here: see `cli/__init__.py`.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence

from torch_mlir_lens.cli import check, export, graph, lower, merge, serve, verify
from torch_mlir_lens.cli.common import CliError, ended_by_signals, report_error
from torch_mlir_lens.cli.parser import EXIT_NO_RUN, PROG, SIGNAL_BASE, Parser
from torch_mlir_lens.rules.exit_codes import help_epilog


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `torch-mlir-lens` command."""
    parser = Parser(
        prog=PROG, description="See what a PyTorch nn.Module becomes in MLIR, line by line.",
        epilog=help_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    lower.add_parser(sub)
    check.add_parser(sub)
    merge.add_parser(sub)
    export.add_parser(sub)
    verify.add_parser(sub)
    graph.add_parser(sub)
    serve.add_parser(sub)
    return parser


_ASYNC_COMMANDS = {"lower": lower.run, "check": check.run, "export": export.run,
                   "verify": verify.run, "graph": graph.run}


async def _until_a_signal(command: Callable[[argparse.Namespace], Awaitable[int]],
                          args: argparse.Namespace) -> int:
    """Run a command that uses workers; Ctrl-C, SIGTERM or SIGHUP end them and exit 128 + N."""
    async with ended_by_signals():
        return await command(args)


def _stdout_to_null() -> None:
    """Point stdout at /dev/null, so Python's flush at exit meets no closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


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
        return SIGNAL_BASE + 2  # SIGINT
    except BrokenPipeError:  # the reader left (`| head`): stop quietly, as Unix tools do
        _stdout_to_null()
        return SIGNAL_BASE + signal.SIGPIPE
    except Exception as exc:  # a bug of ours: still one line, and no traceback
        sys.stderr.write(f"{PROG}: error: internal error: {type(exc).__name__}: {exc}\n")
        return EXIT_NO_RUN

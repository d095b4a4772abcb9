"""`torch-mlir-lens check PATH…`: the parser, and the dispatch to the repository check
(`check_repo`) or, for explicit inputs or one notebook, the single-module check (`check_file`)."""

from __future__ import annotations

import argparse
from typing import Any

from torch_mlir_lens.cli.common import EngineFactory, add_cache, add_inputs, make_engine
from torch_mlir_lens.rules.targets import BACKENDS


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `check` subcommand (with the repository options of `check_repo`)."""
    from torch_mlir_lens.cli.check_repo import add_check_arguments

    check: argparse.ArgumentParser = sub.add_parser(
        "check", help="list the ops each backend cannot lower")
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files, folders and globs (default: `paths` in pyproject.toml)")
    check.add_argument("--module", metavar="NAME")
    check.add_argument("--targets", default=",".join(BACKENDS), metavar="LIST",
                       help=f"comma-separated targets (default {','.join(BACKENDS)})")
    add_inputs(check)
    add_cache(check)
    check.add_argument("--json", action="store_true", help="same as --format json")
    add_check_arguments(check)
    return check


async def run(args: argparse.Namespace, make_engine: EngineFactory = make_engine) -> int:
    """`check PATH…`: a repository (check_repo); explicit inputs: one module (check_file).

    A signal (Ctrl-C, SIGTERM, SIGHUP) ends the workers and exits 128 + its number (`main`)."""
    from torch_mlir_lens.cli import check_repo

    if check_repo.single_module_run(args):
        from torch_mlir_lens.cli import check_file

        check_repo.fill_single_module_defaults(args)
        return await check_file.run(args, make_engine)
    return await check_repo.run_check(args)

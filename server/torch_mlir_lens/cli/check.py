"""`torch-mlir-lens check PATH…`: the parser, the settings handed to the check gate, and what
it prints.

The settings are resolved by `repo_check` (command line, else `[tool.torch-mlir-lens]` of the
closest pyproject.toml, else the defaults); then every check, of a repository or of one file's
module with the inputs named here (`--inputs`...), runs through `repo_check.run`, and its
report goes to stdout or to `-o`. An IREE target asked for without IREE installed is one line
saying what to install (exit 3), before any file is collected.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from torch_mlir_lens.cli import iree_options
from torch_mlir_lens.cli.common import add_cache, add_inputs, dim_sizes
from torch_mlir_lens.cli.report_output import as_cli_error, emit
from torch_mlir_lens.project import limits
from torch_mlir_lens.rules.targets import BACKENDS


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `check` subcommand: the single-file options and the repository ones."""
    from torch_mlir_lens.repo_check import FORMATS

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
    check.add_argument("-j", "--jobs", type=limits.argument(limits.jobs), metavar="N",
                       help="N workers side by side, at most one per CPU (default: CPU "
                            "count, bounded by memory: N × --memory-limit must fit)")
    check.add_argument("--format", choices=FORMATS, help="report format (default text)")
    check.add_argument("-o", "--output", metavar="FILE",
                       help="write the report to FILE (the summary still goes to stderr)")
    check.add_argument("--baseline", metavar="FILE",
                       help="accept the findings listed in FILE: only new ones fail")
    check.add_argument("--write-baseline", action="store_true",
                       help="write every current finding to the baseline file and exit 0")
    check.add_argument("--shard", metavar="I/N",
                       help="check only the I-th of N equal slices of the modules")
    check.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                       help="skip paths matching this gitignore-style pattern (repeatable)")
    check.add_argument("--require-inputs", action="store_true",
                       help="a module without example inputs is an error, not a note")
    check.add_argument("--list", action="store_true",
                       help="print the modules this run (or shard) would check, one "
                            "`file::Module` a line, and exit without lowering anything")
    check.add_argument("--iree-arch", action="append", default=[], metavar="TARGET=ARCH",
                       help="the architecture an IREE target compiles for (iree-cuda=sm_86, "
                            "iree-rocm=gfx90a; ARCH alone with one IREE target); repeatable "
                            "(default: `ireeArchs` in pyproject.toml, else each target's)")
    check.add_argument("--config", metavar="PYPROJECT",
                       help="read [tool.torch-mlir-lens] from this file (default: the "
                            "closest pyproject.toml that has it)")
    # Unset means "from pyproject.toml, else the default": repo_check resolves them.
    check.set_defaults(targets=None, timeout=None, memory_limit=None)
    return check


async def run(args: argparse.Namespace) -> int:
    """`check PATH…`: the check gate, of a repository or of one module with named inputs.

    A signal (Ctrl-C, SIGTERM, SIGHUP) ends the workers and exits 128 + its number (`main`)."""
    from torch_mlir_lens import repo_check

    with as_cli_error():
        cwd = os.getcwd()
        values = {**vars(args), "dims": dim_sizes(args.dim)}
        settings = repo_check.resolve_settings(
            repo_check.CommandLine.from_values(values),
            repo_check.read_project_config(args.config, cwd), cwd)
        if not settings.list_only:
            iree_options.require(settings.targets)
        result = await repo_check.run(settings)
        emit(result.text(settings.fmt, settings.root), settings.output)
    if result.cache_note:
        sys.stderr.write(result.cache_note + "\n")
    if settings.output is not None and result.report is not None:
        sys.stderr.write(result.summary + "\n")
    return result.exit_code

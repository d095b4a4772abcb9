"""`torch-mlir-lens merge REPORT… [-o OUT] [--format F]`: one report from the reports of the
shards of one run (JSON or SARIF); the exit code is that of a check of every module.

The reports must come from one run: the same version, targets, settings and module list, and
the shards exactly 1..N, each module in one of them; anything else exits 2 naming what differs
(`repo_check.merge_reports` decides).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from torch_mlir_lens.cli.report_output import as_cli_error, emit, read_json


def add_parser(sub: Any) -> None:
    """Add the `merge` subcommand."""
    from torch_mlir_lens.repo_check import FORMATS

    merge = sub.add_parser("merge", help="combine the JSON or SARIF reports of shards")
    merge.add_argument("reports", nargs="+", metavar="REPORT")
    merge.add_argument("-o", "--output", metavar="FILE")
    merge.add_argument("--format", choices=FORMATS,
                       help="output format (default: that of the inputs; SARIF in, SARIF out)")


def run(args: argparse.Namespace) -> int:
    """Merge the reports; the exit code is that of a check of every module."""
    from torch_mlir_lens import repo_check

    with as_cli_error():
        repo_check.check_writable(args.output, "report")
        logs = [(path, read_json(path)) for path in args.reports]
        merged = repo_check.merge_reports(logs, args.format, os.getcwd())
        emit(merged.text, args.output)
    return merged.exit_code

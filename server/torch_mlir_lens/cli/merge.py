"""`torch-mlir-lens merge REPORT…`: one report from the shards' reports (repo_check does it)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    """Add the `merge` subcommand."""
    from torch_mlir_lens.repo_check.command import add_merge_parser

    add_merge_parser(sub)


def run(args: argparse.Namespace) -> int:
    """Merge the reports; the exit code is that of a check of every module."""
    from torch_mlir_lens.repo_check.command import run_merge

    return run_merge(args)

"""`torch-mlir-lens merge REPORT… [-o OUT] [--format F]`: one report from the reports of the
shards of one run (JSON or SARIF); the exit code is that of a check of every module.

The reports must come from one run: the same version, targets, settings and module list, and
the shards exactly 1..N, each module in one of them; anything else exits 2 naming what differs.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from torch_mlir_lens.cli.common import CliError
from torch_mlir_lens.cli.report_output import check_writable, emit, read_json
from torch_mlir_lens.repo_check.render import FORMATS, render
from torch_mlir_lens.repo_check.report import Report, module_key
from torch_mlir_lens.repo_check.run_identity import (
    MergeMismatch,
    RunIdentity,
    check_modules_once,
    check_together,
)


def add_parser(sub: Any) -> None:
    """Add the `merge` subcommand."""
    merge = sub.add_parser("merge", help="combine the JSON or SARIF reports of shards")
    merge.add_argument("reports", nargs="+", metavar="REPORT")
    merge.add_argument("-o", "--output", metavar="FILE")
    merge.add_argument("--format", choices=FORMATS,
                       help="output format (default: that of the inputs; SARIF in, SARIF out)")


def run(args: argparse.Namespace) -> int:
    """Merge the reports; the exit code is that of a check of every module."""
    check_writable(args.output, "report")
    logs = [read_json(p) for p in args.reports]
    if all(isinstance(d, dict) and "runs" in d for d in logs):
        return _merge_sarif(args, logs)
    return _merge_json(args, logs)


def _one_run(ids: list[RunIdentity], modules: list[str]) -> None:
    """The reports are the shards 1..N of one run, each module in one of them."""
    try:
        check_together(ids)
        check_modules_once(modules)
    except MergeMismatch as err:
        raise CliError(err.message) from err


def _merge_sarif(args: argparse.Namespace, logs: list[Any]) -> int:
    from torch_mlir_lens.repo_check.sarif import merge_sarif, run_identity, sarif_failed

    if args.format not in (None, "sarif"):
        raise CliError("SARIF reports merge into SARIF only (merge JSON reports for other "
                       "formats)")
    try:
        ids = [run_identity(log, path) for path, log in zip(args.reports, logs, strict=True)]
        merged = merge_sarif(logs)
        props = merged["runs"][0]["properties"]["torchMlirLens"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CliError(f"not a torch-mlir-lens SARIF log ({exc})") from exc
    _one_run(ids, props["modules"])
    emit(json.dumps(merged, indent=1) + "\n", args.output)
    return 1 if sarif_failed(merged) else 0


def _merge_json(args: argparse.Namespace, logs: list[Any]) -> int:
    reports = []
    for path, data in zip(args.reports, logs, strict=True):
        try:
            reports.append(Report.from_json(data))
        except (ValueError, KeyError, TypeError) as exc:
            raise CliError(f"not a torch-mlir-lens check --format json report ({exc})",
                           file=path) from exc
    _one_run([RunIdentity(path, r.version, tuple(r.targets), r.config, r.plan, tuple(r.shards))
              for path, r in zip(args.reports, reports, strict=True)],
             [f"{e['file']}::{e['name']}" for r in reports for e in r.modules])
    first = reports[0]
    merged = Report(targets=list(first.targets), version=first.version, config=first.config,
                    plan=first.plan)
    for r in reports:
        merged.modules += r.modules
        merged.problems += r.problems
        merged.warnings += r.warnings
        merged.shards += r.shards
        merged.fixed += r.fixed
        merged.baseline = merged.baseline or r.baseline
    merged.modules.sort(key=module_key)
    emit(render(merged, args.format or "json", os.getcwd()), args.output)
    return merged.exit_code()

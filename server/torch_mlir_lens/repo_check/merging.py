"""One report from the reports of the shards of one run (JSON or SARIF), as `merge` writes it.

The reports must come from one run: the same version, targets, settings and module list, and
the shards exactly 1..N, each module in one of them; anything else is a CheckInputError naming
what differs. The exit code is that of a check of every module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens.repo_check.errors import CheckInputError
from torch_mlir_lens.repo_check.outputs import render
from torch_mlir_lens.repo_check.report import Report, module_key
from torch_mlir_lens.repo_check.run_identity import (
    MergeMismatch,
    RunIdentity,
    check_modules_once,
    check_together,
)


@dataclass(frozen=True)
class MergedReport:
    """The merged report, in its format, and the exit code of a check of every module."""

    text: str
    exit_code: int


def merge_reports(reports: Sequence[tuple[str, Any]], fmt: str | None,
                  root: str) -> MergedReport:
    """Merge the parsed reports (each with the file it came from) into `fmt` (None: that of
    the inputs; SARIF in, SARIF out)."""
    logs = [log for _, log in reports]
    if all(isinstance(d, dict) and "runs" in d for d in logs):
        return _merge_sarif(reports, fmt)
    return _merge_json(reports, fmt, root)


def _one_run(ids: list[RunIdentity], modules: list[str]) -> None:
    """The reports are the shards 1..N of one run, each module in one of them."""
    try:
        check_together(ids)
        check_modules_once(modules)
    except MergeMismatch as err:
        raise CheckInputError(err.message) from err


def _merge_sarif(reports: Sequence[tuple[str, Any]], fmt: str | None) -> MergedReport:
    from torch_mlir_lens.repo_check.sarif import merge_sarif, run_identity, sarif_failed

    if fmt not in (None, "sarif"):
        raise CheckInputError("SARIF reports merge into SARIF only (merge JSON reports for "
                              "other formats)")
    try:
        ids = [run_identity(log, path) for path, log in reports]
        merged = merge_sarif([log for _, log in reports])
        props = merged["runs"][0]["properties"]["torchMlirLens"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckInputError(f"not a torch-mlir-lens SARIF log ({exc})") from exc
    _one_run(ids, props["modules"])
    return MergedReport(json.dumps(merged, indent=1) + "\n", 1 if sarif_failed(merged) else 0)


def _merge_json(reports: Sequence[tuple[str, Any]], fmt: str | None,
                root: str) -> MergedReport:
    parsed = []
    for path, data in reports:
        try:
            parsed.append(Report.from_json(data))
        except (ValueError, KeyError, TypeError) as exc:
            raise CheckInputError(f"not a torch-mlir-lens check --format json report ({exc})",
                                  path) from exc
    paths = [path for path, _ in reports]
    _one_run([RunIdentity(path, r.version, tuple(r.targets), r.config, r.plan, tuple(r.shards))
              for path, r in zip(paths, parsed, strict=True)],
             [f"{e['file']}::{e['name']}" for r in parsed for e in r.modules])
    first = parsed[0]
    merged = Report(targets=list(first.targets), version=first.version, config=first.config,
                    plan=first.plan)
    for r in parsed:
        merged.modules += r.modules
        merged.problems += r.problems
        merged.warnings += r.warnings
        merged.shards += r.shards
        merged.fixed += r.fixed
        merged.baseline = merged.baseline or r.baseline
    merged.modules.sort(key=module_key)
    return MergedReport(render(merged, fmt or "json", root), merged.exit_code())

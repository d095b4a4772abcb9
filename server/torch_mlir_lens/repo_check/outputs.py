"""The reports a run writes, in one place: each format (text, JSON, SARIF, GitHub), and the
files (the report of `-o`, the baseline) checked before the run and written atomically after it.

A report or baseline is written to a temporary file beside it and renamed over it, so a
reader never sees half of one and a failed write leaves the old file as it was. Whether that
can work is tried before any module is lowered (a folder given as `-o`, a folder that does
not exist, a read-only one, a source file), so a long run never ends in a lost report and a
report never replaces source code.
"""

from __future__ import annotations

import json
import os

from torch_mlir_lens.project.write_policy import SOURCE_SUFFIXES
from torch_mlir_lens.repo_check.errors import CheckInputError
from torch_mlir_lens.repo_check.report import Report
from torch_mlir_lens.system.atomic_write import probe, write_atomically

FORMATS = ("text", "json", "sarif", "github", "html")


def render(report: Report, fmt: str, root: str) -> str:
    """The report in one of FORMATS (paths relative to the project `root`)."""
    from torch_mlir_lens.repo_check.sarif import to_sarif
    from torch_mlir_lens.repo_check.text_formats import render_github, render_text

    if fmt == "json":
        return json.dumps(report.to_json(), indent=1) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(report, root), indent=1) + "\n"
    if fmt == "github":
        return render_github(report, root)
    if fmt == "html":
        from torch_mlir_lens.repo_check.html_report import render_html

        return render_html(report, root)
    return render_text(report, root)


def unwritable(path: str) -> str | None:
    """Why `path` cannot be written atomically, or None when it can (tried, not guessed:
    a temporary file is created beside it and removed)."""
    if os.path.isdir(path):
        return "is a folder (give a file name)"
    if path.lower().endswith(SOURCE_SUFFIXES):
        return "is a source file name: a report never replaces source code"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"no such folder: {folder}"
    try:
        probe(path)
    except OSError as exc:
        return f"cannot write in {folder}: {exc.strerror or exc}"
    return None


def check_writable(path: str | None, what: str) -> None:
    """Refuse an output (`what`: "report", "baseline") that cannot be written, before the
    run rather than after it; CheckInputError saying why."""
    problem = unwritable(path) if path is not None else None
    if problem is not None:
        raise CheckInputError(f"cannot write the {what} there: {problem}", path)


def write_report(path: str, text: str) -> None:
    """Write a report to `path` whole or not at all; CheckInputError when it cannot be."""
    try:
        write_text_atomically(path, text)
    except OSError as exc:
        raise CheckInputError(f"cannot write the report: {exc.strerror or exc}", path) from exc


def write_text_atomically(path: str, text: str) -> None:
    """Write `text` to `path` whole or not at all (`system/atomic_write.py`); OSError on
    failure, any old file untouched."""
    write_atomically(path, text.encode("utf-8"))



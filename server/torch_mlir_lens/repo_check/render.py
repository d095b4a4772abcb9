"""A report in each output format: text, json, sarif, github."""

from __future__ import annotations

import json

from torch_mlir_lens.repo_check.report import Report

FORMATS = ("text", "json", "sarif", "github")


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
    return render_text(report, root)

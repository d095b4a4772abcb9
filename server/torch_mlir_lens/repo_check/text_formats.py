"""`--format text` (people) and `--format github` (workflow annotations on the diff).

A notebook's lines read `NOTEBOOK.ipynb:CELL:LINE` in both. A workflow annotation also needs
a line of the file as stored, where GitHub shows it on the diff: for a notebook, the line of
its JSON text that holds the cell's line (`notebook_modules.FileLines`). An ONNX model's finding
reads `MODEL.onnx: node N "name" (Op, opset K)`; its annotation has no line (a node is none).
"""

from __future__ import annotations

import io
import os
from itertools import groupby
from typing import Any

from torch_mlir_lens.findings import Finding
from torch_mlir_lens.findings.wording import at_node
from torch_mlir_lens.repo_check import notebook_modules
from torch_mlir_lens.repo_check.listing import file_listing
from torch_mlir_lens.repo_check.report import Report
from torch_mlir_lens.repo_check.rewrite_findings import rewrite_note


def _shown(root: str, file: str) -> str:
    """A report path as people read it: relative to the working directory when inside it."""
    path = os.path.join(root, file)
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _where(root: str, file: str, line: int | None, cell: int | None = None) -> str:
    path = os.path.relpath(os.path.join(root, file))
    path = file if path.startswith("..") else path
    return notebook_modules.where(path, line, cell)


def _where_finding(root: str, f: Finding) -> str:
    """Where a finding is, as people read it (at its node in an ONNX model)."""
    if f.node is not None:
        return at_node(_shown(root, f.file), f.node)
    return _where(root, f.file, f.line, f.cell)


def summary_line(report: Report) -> str:
    """The closing line: modules, verdicts, findings."""
    s = report.summary()
    parts = [f"{s['ok']} ok", f"{s['failing']} failing"]
    if s["skipped"]:
        parts.append(f"{s['skipped']} skipped (no example inputs)")
    line = f"{s['modules']} modules in {s['files']} files: " + ", ".join(parts)
    if s["findings"]:
        line += f"; {s['findings']} findings"
        if report.baseline is not None:
            line += f" ({s['new']} new, {s['baselined']} baselined)"
    if s["problems"]:
        line += f"; {s['problems']} files could not be read"
    return line


def render_text(report: Report, root: str) -> str:
    """Per file the single-file `check` listing, then file problems, new findings, summary."""
    out = io.StringIO()
    for file, entries in groupby(report.modules, key=lambda e: e["file"]):
        out.write(file_listing(_shown(root, file), list(entries)))
    for p in report.problems:
        out.write(f"{_where(root, p.file, p.line, p.cell)}: error: {p.message}\n")
    if report.baseline is not None:
        new = [f for f in report.findings() if not f.baselined and f.module is not None]
        if new:
            out.write(f"\nnot in the baseline ({len(new)}):\n")
            for f in new:
                out.write(f"  {_where_finding(root, f)}: {f.rule}: {f.module}\n")
        if report.fixed:
            out.write(f"\n{len(report.fixed)} baseline entries no longer occur "
                      "(fixed; refresh with --write-baseline)\n")
    out.write(f"\n{summary_line(report)}\n")
    return out.getvalue()


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(level: str, props: dict[str, Any], message: str) -> str:
    fields = ",".join(f"{k}={_escape_property(str(v))}" for k, v in props.items()
                      if v is not None)
    return f"::{level} {fields}::{_escape_data(message)}"


def _title(f: Finding) -> str:
    return f"torch-mlir-lens {f.rule}" + (f" in {f.module}" if f.module else "")


def render_github(report: Report, root: str) -> str:
    """GitHub Actions workflow commands: an error per new finding, a notice per skip.

    A notebook's annotation sits at the file line holding the cell's line, its message
    starting with `NOTEBOOK.ipynb:CELL:LINE`."""
    file_lines = notebook_modules.FileLines(root)
    lines: list[str] = []
    for f in report.findings():
        if f.baselined:
            continue
        message = f.message
        if f.cell:
            message = f"{notebook_modules.where(f.file, f.line, f.cell)}: {message}"
        elif f.node is not None:
            message = f"{at_node(f.file, f.node)}: {message}"
        if f.rewrite and f.rewrite.get("rewrites"):
            message += f"\n{rewrite_note(f.rewrite)}"
        line = None if f.node is not None else file_lines.line(f.file, f.cell, f.line)
        lines.append(_annotation("error", {"file": f.file, "line": line, "title": _title(f)},
                                 message))
    for w in report.warnings:
        lines.append(_annotation("warning", {
            "file": w.file, "line": file_lines.line(w.file, w.cell, w.line),
            "title": "torch-mlir-lens left a cell out"},
            f"{notebook_modules.where(w.file, w.line, w.cell)}: {w.message}"))
    for e in report.modules:
        if "skipped" in e:
            message = e["skipped"]
            if e.get("cell"):
                message = f"{notebook_modules.where(e['file'], e['line'], e['cell'])}: {message}"
            lines.append(_annotation("notice", {
                "file": e["file"], "line": file_lines.line(e["file"], e.get("cell"), e["line"]),
                "title": f"torch-mlir-lens skipped {e['name']}"}, message))
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"

"""Notebooks in `check PATH…`: collected from folders like Python files (not their
`.ipynb_checkpoints` copies, not when .gitignored), each module lowered on the isolated
workers from the cells up to its own (a later training cell never runs: it would write a
marker file and raise), located `NOTEBOOK.ipynb:CELL:LINE` in text and GitHub annotations,
at the .ipynb file's line (plus the cell) in SARIF, baselined and sharded like any module."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from torch_mlir_lens.repo_check.ipynb_lines import cell_file_lines, file_line
from torch_mlir_lens.repo_check.paths import collect
from torch_mlir_lens.repo_check.plan import plan_modules

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
TIMEOUT = 600
NB = "nbs/heads.ipynb"
TRAINING_MARKER = "training-ran.marker"
LOADED_MARKER = "definitions-ran.marker"

CELLS = [
    ("markdown", "# Heads\n\nA head with an op Linalg cannot lower, then training."),
    ("code", """import os
import pathlib

import torch
from torch import nn

HERE = pathlib.Path(os.path.dirname(os.path.abspath(__file__)))
loaded = (HERE / "definitions-ran.marker").write_text("ran")
%load_ext autoreload"""),
    ("code", """# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class QuantileHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.sigmoid(self.fc(x))
        return torch.erfinv(2 * y - 1)"""),
    ("code", """# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class Healthy(nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


class NoInputs(nn.Module):
    def forward(self, x, y):
        return x * y"""),
    ("code", """# Training: must never run when a module is lowered.
ran = (HERE / "training-ran.marker").write_text("ran")
head = QuantileHead()
head(torch.randn(2, 8)).sum().backward()
raise RuntimeError("the training cell ran")"""),
    ("code", "def broken(:\n    pass"),
]
PLAIN = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Plain(nn.Module):
    def forward(self, x):
        return torch.tanh(x)
'''
MODULES = [f"{NB}::QuantileHead", f"{NB}::Healthy", f"{NB}::NoInputs", "pkg/plain.py::Plain"]


def notebook_json(cells: list[tuple[str, str]]) -> str:
    """nbformat 4's layout: each source line a string on its own line of the file."""
    def cell(kind: str, source: str) -> dict[str, Any]:
        out: dict[str, Any] = {"cell_type": kind, "metadata": {},
                               "source": source.splitlines(keepends=True)}
        if kind == "code":
            out.update(execution_count=None, outputs=[])
        return out

    return json.dumps({"cells": [cell(k, s) for k, s in cells], "metadata": {
        "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def make_repo(root: Path) -> None:
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("scratch/\n")
    for rel in (NB, "nbs/.ipynb_checkpoints/heads-checkpoint.ipynb", "scratch/draft.ipynb"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(notebook_json(CELLS))
    (root / "pkg").mkdir()
    (root / "pkg" / "plain.py").write_text(PLAIN)


def file_line_of(root: Path, rel: str, needle: str) -> int:
    """The 1-based line of `rel` (as stored) holding `needle`."""
    lines = (root / rel).read_text().splitlines()
    (hit,) = [i + 1 for i, text in enumerate(lines) if needle in text]
    return hit


# --- without a worker ------------------------------------------------------------------------


def test_folders_collect_notebooks_but_not_checkpoints_or_ignored(tmp_path: Path) -> None:
    make_repo(tmp_path)
    files = collect([str(tmp_path)], [], str(tmp_path)).files
    assert [str(Path(f).relative_to(tmp_path)) for f in files] == [NB, "pkg/plain.py"]
    globbed = collect([str(tmp_path / "**" / "*.ipynb")], [], str(tmp_path)).files
    assert [str(Path(f).relative_to(tmp_path)) for f in globbed] == [NB, "scratch/draft.ipynb"]
    excluded = collect([str(tmp_path)], ["*.ipynb"], str(tmp_path)).files
    assert [str(Path(f).relative_to(tmp_path)) for f in excluded] == ["pkg/plain.py"]


def test_plan_finds_the_modules_of_the_cells_and_warns_about_a_broken_cell(
        tmp_path: Path) -> None:
    make_repo(tmp_path)
    plan = plan_modules([str(tmp_path / NB)], str(tmp_path), {})
    assert [(t.key, t.inputs) for t in plan.tasks] == [
        (f"{NB}::QuantileHead", "comment"), (f"{NB}::Healthy", "comment"),
        (f"{NB}::NoInputs", "missing")]
    (warning,) = plan.cell_warnings
    assert (warning.rel, warning.cell, warning.line) == (NB, 6, 1)
    # The first module's text stops at its own cell: the training cell is not in it.
    text = plan.text_of(plan.tasks[0])
    assert "class QuantileHead" in text and "training-ran" not in text


def test_cell_lines_map_to_the_lines_of_the_file_in_any_layout() -> None:
    pretty = notebook_json(CELLS)
    cells = cell_file_lines(pretty)
    assert len(cells) == len(CELLS)
    line = file_line(cells, 3, 9)
    assert line is not None and "torch.erfinv" in pretty.splitlines()[line - 1]
    compact = json.dumps(json.loads(pretty))  # everything on one line
    assert file_line(cell_file_lines(compact), 3, 9) == 1
    joined = json.loads(pretty)
    for c in joined["cells"]:
        c["source"] = "".join(c["source"])  # one string per cell
    text = json.dumps(joined, indent=1)
    line = file_line(cell_file_lines(text), 3, 9)
    assert line is not None and "class QuantileHead" in text.splitlines()[line - 1]
    assert cell_file_lines("[1, 2]") == [] and cell_file_lines("{not json") == []


# --- the command, on real workers ------------------------------------------------------------


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A full run writing a baseline and its JSON report, then two shards against that
    baseline as SARIF, merged."""
    root = tmp_path_factory.mktemp("nbrepo")
    make_repo(root)
    common = ("-j", "2", "--targets", "linalg,tosa", "--timeout", "120")
    full = run("check", ".", *common, "--format", "json", "-o", "report.json",
               "--write-baseline", cwd=root)
    shards = [run("check", ".", *common, "--shard", f"{i}/2", "--baseline",
                  "torch-mlir-lens-baseline.json", "--format", "sarif", "-o", f"s{i}.sarif",
                  cwd=root) for i in (1, 2)]
    merged = run("merge", "s1.sarif", "s2.sarif", "-o", "merged.sarif", cwd=root)
    return {"root": root, "full": full, "shards": shards, "merged": merged}


def test_training_cell_never_ran(repo: dict[str, Any]) -> None:
    root = repo["root"]
    assert (root / "nbs" / LOADED_MARKER).exists()  # positive control: definitions ran
    assert not (root / "nbs" / TRAINING_MARKER).exists(), "the training cell ran"


def test_json_report_gives_notebook_lines_as_cell_lines(repo: dict[str, Any]) -> None:
    full = repo["full"]
    assert full.returncode == 0, full.stderr[-3000:]  # --write-baseline
    assert f"{NB}:6:1: warning:" in full.stderr and "left out" in full.stderr
    data = json.loads((repo["root"] / "report.json").read_text())
    (warning,) = data["warnings"]  # the broken cell, in the report too, not only on stderr
    assert (warning["file"], warning["cell"], warning["line"]) == (NB, 6, 1)
    assert "left out" in warning["message"]
    assert [f"{m['file']}::{m['name']}" for m in data["modules"]] == MODULES
    head, healthy, skipped, _plain = data["modules"]
    assert (head["cell"], head["line"]) == (3, 2)
    assert head["targets"]["linalg"]["unsupported"][0]["cell"] == 3
    assert head["targets"]["linalg"]["unsupported"][0]["line"] == 9
    for verdict in healthy["targets"].values():  # every op of each backend's IR lowers
        assert verdict.pop("ops")["rejected"] == 0
    assert healthy["targets"] == {"linalg": {"ok": True, "unsupported": [], "error": None,
                                             "error_line": None},
                                  "tosa": {"ok": True, "unsupported": [], "error": None,
                                           "error_line": None}}
    assert (skipped["cell"], skipped["line"], "skipped" in skipped) == (4, 7, True)
    (f,) = [f for f in head["findings"] if f["rule"] == "linalg/aten.erfinv"]
    assert (f["file"], f["cell"], f["line"], f["module_cell"], f["module_line"]) == (
        NB, 3, 9, 3, 2)
    base = json.loads((repo["root"] / "torch-mlir-lens-baseline.json").read_text())
    assert {"file": NB, "module": "QuantileHead", "rule": "linalg/aten.erfinv"} in \
        base["entries"]


def test_text_and_github_formats_write_cell_locations(repo: dict[str, Any]) -> None:
    root = repo["root"]
    text = run("merge", "report.json", "--format", "text", cwd=root)
    assert text.returncode == 1, text.stderr  # the report itself was not baselined
    assert "  QuantileHead (cell 3 line 2): linalg 1 unsupported" in text.stdout
    assert "    linalg: `aten.erfinv` at cell 3 line 9" in text.stdout
    assert "  NoInputs (cell 4 line 7): skipped" in text.stdout
    github = run("merge", "report.json", "--format", "github", cwd=root)
    line = file_line_of(root, NB, "return torch.erfinv(2 * y - 1)")
    (error,) = [ln for ln in github.stdout.splitlines() if "linalg/aten.erfinv" in ln]
    assert error.startswith(f"::error file={NB},line={line},")
    assert f"::{NB}:3:9: " in error
    (warning,) = [ln for ln in github.stdout.splitlines() if ln.startswith("::warning ")]
    assert f"file={NB}," in warning and f"::{NB}:6:1: " in warning and "left out" in warning


def test_shards_with_the_baseline_pass_and_merge_to_valid_sarif(repo: dict[str, Any]) -> None:
    root = repo["root"]
    for proc in repo["shards"]:
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert repo["merged"].returncode == 0, repo["merged"].stderr
    log = json.loads((root / "merged.sarif").read_text())
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(log), key=str)
    assert not errors, [e.message for e in errors[:5]]
    run_ = log["runs"][0]
    assert sorted(run_["properties"]["torchMlirLens"]["modules"]) == sorted(MODULES)
    (result,) = [r for r in run_["results"] if r["ruleId"] == "linalg/aten.erfinv"]
    assert result["baselineState"] == "unchanged"
    (loc,) = result["locations"]
    assert loc["physicalLocation"]["artifactLocation"]["uri"] == NB
    assert loc["physicalLocation"]["region"]["startLine"] == file_line_of(
        root, NB, "return torch.erfinv(2 * y - 1)")
    assert loc["properties"] == {"notebookCell": 3, "notebookCellLine": 9}
    # The broken cell: reported once (by shard 1), as a warning about the run.
    (left_out,) = [n for n in run_["invocations"][0]["toolExecutionNotifications"]
                   if n["level"] == "warning"]
    assert left_out["message"]["text"].startswith(f"{NB}:6:1: ")
    assert left_out["locations"][0]["properties"] == {"notebookCell": 6, "notebookCellLine": 1}
    assert result["message"]["text"].startswith(f"{NB}:3:9: ")
    (related,) = result["relatedLocations"]
    assert related["physicalLocation"]["region"]["startLine"] == file_line_of(
        root, NB, "class QuantileHead(nn.Module):")
    listed = [run("check", ".", "--list", "--shard", f"{i}/2", cwd=root).stdout.split()
              for i in (1, 2)]
    assert listed[0] + listed[1] == MODULES


def test_checkpoints_can_still_be_checked_by_name(tmp_path: Path) -> None:
    make_repo(tmp_path)
    shutil.rmtree(tmp_path / "pkg")
    listed = run("check", "nbs/.ipynb_checkpoints/heads-checkpoint.ipynb", "--list",
                 cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[0] == \
        "nbs/.ipynb_checkpoints/heads-checkpoint.ipynb::QuantileHead"

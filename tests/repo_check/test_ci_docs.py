"""The CI examples of docs/ci.md run as written, on a small project built from the same page.

The project's pyproject.toml is the page's TOML block; the adoption command is its bash
block; the GitHub Actions workflow and the pre-commit hook are read from docs/ci/ and their
`torch-mlir-lens` commands run as the runner would run them (matrix values substituted). The
docs and this test cannot drift apart: change one and the other follows or fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
TIMEOUT = 600
pytestmark = pytest.mark.timeout(900)

ENCODER = '''import torch
from torch import nn


class Encoder(nn.Module):
    """Its inputs come from pyproject.toml."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''
HEAD = '''import torch
from torch import nn


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.erfinv(torch.sigmoid(self.fc(x)) - 0.5)
'''
NEW_PROBLEM = '''

# torch-mlir-lens: inputs=(torch.rand(2, 8) + 0.5,)
class Prior(nn.Module):
    def forward(self, x):
        return torch.lgamma(x)
'''
LEGACY = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.rand(2, 8),)
class Old(nn.Module):
    def forward(self, x):
        return torch.lgamma(x)
'''


def blocks(markdown: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", markdown, re.S | re.M)


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One `run:` line as a runner's bash runs it, with this venv's torch-mlir-lens first."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["bash", "-ec", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def lens_commands(job: dict[str, Any]) -> list[str]:
    """The `torch-mlir-lens` commands of a workflow job (installs and actions are the CI's)."""
    return [step["run"] for step in job["steps"]
            if str(step.get("run", "")).startswith("torch-mlir-lens ")]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = (DOCS / "ci.md").read_text()
    root = tmp_path_factory.mktemp("ci-docs")
    (root / "pyproject.toml").write_text(blocks(page, "toml")[0])
    (root / "models" / "legacy").mkdir(parents=True)
    (root / "models" / "encoder.py").write_text(ENCODER)
    (root / "models" / "heads.py").write_text(HEAD)
    (root / "models" / "legacy" / "old.py").write_text(LEGACY)
    for command in blocks(page, "bash")[0].strip().splitlines():
        done = shell(command, root)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-3000:])
    return root


def test_adoption_writes_the_baseline_the_config_names(project: Path) -> None:
    baseline = json.loads((project / "torch-mlir-lens-baseline.json").read_text())
    rules = {(e["file"], e["module"], e["rule"]) for e in baseline["entries"]}
    assert ("models/heads.py", "Head", "linalg/aten.erfinv") in rules
    assert ("models/heads.py", "Head", "tosa/aten.erfinv") in rules
    assert not any(e["file"].startswith("models/legacy") for e in baseline["entries"])
    assert not any(e["module"] == "Encoder" for e in baseline["entries"])  # inputs from config


def test_github_workflow_commands_pass_on_the_baselined_project(project: Path) -> None:
    workflow = yaml.safe_load((DOCS / "ci" / "github-workflow.yml").read_text())
    check, report = workflow["jobs"]["check"], workflow["jobs"]["report"]
    shards = check["strategy"]["matrix"]["shard"]
    procs = []
    for shard in shards:  # the matrix machines, side by side
        for command in lens_commands(check):
            line = command.replace("${{ matrix.shard }}", str(shard))
            env = dict(os.environ,
                       PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
            procs.append((line, subprocess.Popen(["bash", "-ec", line], cwd=project, env=env,
                                                 stdout=subprocess.PIPE,
                                                 stderr=subprocess.PIPE, text=True)))
    for line, proc in procs:
        out, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0, (line, out[-2000:], err[-3000:])
    modules = []
    for shard in shards:
        data = json.loads((project / f"lens-{shard}.json").read_text())
        modules += [f"{m['file']}::{m['name']}" for m in data["modules"]]
    assert sorted(modules) == ["models/encoder.py::Encoder", "models/heads.py::Head"]

    outputs = [shell(command, project) for command in lens_commands(report)]
    assert all(o.returncode == 0 for o in outputs), [o.stderr for o in outputs]
    sarif = json.loads((project / "torch-mlir-lens.sarif").read_text())
    assert not list(jsonschema.Draft4Validator(SCHEMA).iter_errors(sarif))
    results = sarif["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"linalg/aten.erfinv", "tosa/aten.erfinv"}
    assert {r["baselineState"] for r in results} == {"unchanged"}
    annotations = [ln for ln in outputs[-1].stdout.splitlines() if ln.startswith("::error")]
    assert annotations == []  # nothing new


def test_pre_commit_hook_fails_on_a_new_problem_only(project: Path) -> None:
    config = yaml.safe_load((DOCS / "ci" / "pre-commit-config.yaml").read_text())
    (hook,) = config["repos"][0]["hooks"]
    assert hook["language"] == "system"
    assert {"python", "jupyter"} <= set(hook["types_or"])  # .py files and notebooks
    files = ["models/heads.py", "models/legacy/old.py"]  # what pre-commit passes
    command = " ".join([hook["entry"], *map(shlex.quote, files)])
    clean = shell(command, project)
    assert clean.returncode == 0, (clean.stdout[-2000:], clean.stderr[-3000:])
    assert "excluded by 'models/legacy/**'" in clean.stderr

    heads = project / "models" / "heads.py"
    heads.write_text(HEAD + NEW_PROBLEM)
    try:
        dirty = shell(command, project)
    finally:
        heads.write_text(HEAD)
    assert dirty.returncode == 1, (dirty.stdout[-2000:], dirty.stderr[-3000:])
    assert "Prior" in dirty.stdout and "lgamma" in dirty.stdout
    new = dirty.stdout.split("not in the baseline", 1)[1]
    assert "Prior" in new and "Head" not in new

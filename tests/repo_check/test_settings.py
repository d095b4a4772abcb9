"""The check's settings, resolved once: the command line, else `[tool.torch-mlir-lens]`, else
the defaults (repo_check/check_settings.py), read from a real pyproject.toml."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from torch_mlir_lens import defaults
from torch_mlir_lens.repo_check import (
    CheckInputError,
    CommandLine,
    read_project_config,
    resolve_settings,
)
from torch_mlir_lens.rules.targets import BACKENDS

PYPROJECT = """[tool.torch-mlir-lens]
targets = ["tosa"]
paths = ["models"]
exclude = ["legacy/"]
timeoutSeconds = 7
memoryLimitMb = 1500
strictExport = true
baseline = "accepted.json"
jobs = 1
rewrites = ["erfinv@tosa"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    return tmp_path


def test_the_project_fills_what_the_command_line_leaves_unset(project: Path) -> None:
    cfg = read_project_config(None, str(project))
    s = resolve_settings(CommandLine(), cfg, "/elsewhere")
    assert (s.root, s.paths, s.exclude, s.targets) == (str(project), (str(project / "models"),),
                                                       ("legacy/",),
                                                       ("tosa",))
    assert (s.timeout_s, s.memory_mb, s.jobs, s.strict_export) == (7, 1500, 1, True)
    assert s.baseline == str(project / "accepted.json") and s.write_baseline_to is None
    assert (s.rewrites, s.prove_rewrites, s.fmt) == (("erfinv@tosa",), True, "text")


def test_the_command_line_wins_and_adds_its_excludes(project: Path) -> None:
    cfg = read_project_config(str(project / "pyproject.toml"), "/")
    given = CommandLine.from_values({
        "paths": ["a.py"], "exclude": ["b/"], "targets": "linalg, stablehlo", "timeout": 3.0,
        "memory_limit": 900, "baseline": "mine.json", "write_baseline": True, "json": True,
        "rewrites": "off", "list": True, "command": "check"})  # unknown names are ignored
    s = resolve_settings(given, cfg, str(project))
    assert (s.paths, s.exclude, s.targets) == (("a.py",), ("legacy/", "b/"),
                                               ("linalg", "stablehlo"))
    assert (s.timeout_s, s.memory_mb, s.baseline, s.write_baseline_to) == (
        3.0, 900, "mine.json", "mine.json")
    assert (s.fmt, s.list_only, s.prove_rewrites) == ("json", True, False)
    # `--rewrites off` proves none; the project's rewrites still lower every module
    assert s.rewrites == ("erfinv@tosa",)


def test_without_a_project_the_defaults_apply(tmp_path: Path) -> None:
    cfg = read_project_config(None, str(tmp_path))
    s = resolve_settings(CommandLine(write_baseline=True), cfg, str(tmp_path))
    assert (s.root, s.paths, s.targets) == (str(tmp_path), (), BACKENDS)
    assert (s.timeout_s, s.memory_mb) == (defaults.TIMEOUT_S, defaults.MEMORY_LIMIT_MB)
    assert s.write_baseline_to == os.path.join(str(tmp_path), "torch-mlir-lens-baseline.json")


@pytest.mark.parametrize(("given", "message"), [
    (CommandLine(targets="linalg,nope"), "unknown target 'nope'"),
    (CommandLine(targets=" , "), "--targets names no target"),
    (CommandLine(shard="3/2"), "shard"),
    (CommandLine(shard="1/2", write_baseline=True), "--write-baseline with --shard"),
    (CommandLine(rewrites="erfinv@nope"), "--rewrites: `erfinv@nope`: unknown backend"),
])
def test_a_value_that_cannot_be_used_is_said(tmp_path: Path, given: CommandLine,
                                             message: str) -> None:
    cfg = read_project_config(None, str(tmp_path))
    with pytest.raises(CheckInputError) as caught:
        resolve_settings(given, cfg, str(tmp_path))
    assert message in caught.value.message


def test_a_config_that_is_a_folder_or_missing_is_located(tmp_path: Path) -> None:
    with pytest.raises(CheckInputError) as caught:
        read_project_config(str(tmp_path), str(tmp_path))
    assert caught.value.file == str(tmp_path) and "is a folder" in caught.value.message
    missing = str(tmp_path / "none.toml")
    with pytest.raises(CheckInputError) as caught:
        read_project_config(missing, str(tmp_path))
    assert caught.value.file == missing

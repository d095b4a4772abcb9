"""`check --targets iree-cpu,iree-rocm` as CI runs it: shards merged into SARIF, a baseline, the
architectures as settings recorded for `merge`, each IREE target its own job (a time-out of one
is that target's finding), an architecture IREE has no target for and a missing IREE said in
one line before or instead of a finding per module."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.test_iree_cli import MODEL, TANH_LINE, WITHOUT_IREE
from tests.repo_check.test_check_cli import one_line_error, run
from tests.repo_check.test_check_examples import assert_valid_sarif

from torch_mlir_lens.findings import make
from torch_mlir_lens.project.config import ConfigError, parse_table
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.repo_check.check_settings import CommandLine, resolve_settings
from torch_mlir_lens.repo_check.errors import CheckInputError
from torch_mlir_lens.repo_check.target_jobs import Lowered, job_groups, verdicts
from torch_mlir_lens.rules.exit_codes import EXIT_NO_RUN, check_exit_code

TARGETS = ("--targets", "iree-cpu,iree-rocm", "--iree-arch", "iree-rocm=gfx90a")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("iree-repo")
    (root / "model.py").write_text(MODEL)
    return root


def test_shards_merge_into_sarif_and_a_baseline_accepts_the_compile_error(repo: Path) -> None:
    for index in (1, 2):  # MLP, then TanhF64
        proc = run("check", "model.py", *TARGETS, "--shard", f"{index}/2", "--format", "json",
                   "-o", f"shard{index}.json", "--cache-dir", "cache", cwd=repo)
        assert proc.returncode == (0, 1)[index - 1], proc.stderr[-2000:]
    proc = run("merge", "shard1.json", "shard2.json", "--format", "sarif", cwd=repo)
    assert proc.returncode == 1, proc.stderr
    log = json.loads(proc.stdout)
    assert_valid_sarif(log)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "iree-cpu/compile-error"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": TANH_LINE} and "undefined symbol: tanh" in \
        result["message"]["text"]
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["shortDescription"]["text"] == ("IREE's compiler fails on the module's Linalg "
                                                "IR for IREE CPU")
    props = log["runs"][0]["properties"]["torchMlirLens"]
    assert props["config"]["ireeArchs"] == {"iree-cpu": "host", "iree-rocm": "gfx90a"}
    proc = run("check", "model.py", *TARGETS, "--cache-dir", "cache", "--write-baseline",
               cwd=repo)
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = run("check", "model.py", *TARGETS, "--cache-dir", "cache", "--baseline",
               "torch-mlir-lens-baseline.json", cwd=repo)
    assert proc.returncode == 0 and "(0 new, 1 baselined)" in proc.stdout, proc.stdout


def test_an_architecture_iree_has_no_target_for_is_one_line(repo: Path) -> None:
    one_line_error(run("check", "model.py", "--module", "MLP", "--targets", "iree-cuda",
                       "--iree-arch", "sm_90", cwd=repo),
                   "IREE CUDA cannot compile for the CUDA architecture sm_90", "--iree-arch")


def test_a_missing_iree_is_one_line_and_exit_3_before_any_module(repo: Path) -> None:
    def without_iree(*args: str) -> subprocess.CompletedProcess[str]:
        command = f"from torch_mlir_lens.cli import main; sys.exit(main({list(args)!r}))"
        return subprocess.run([sys.executable, "-c", WITHOUT_IREE.replace("{run}", command)],
                              cwd=repo, capture_output=True, text=True, timeout=120,
                              check=False)

    proc = without_iree("check", "model.py", "--targets", "linalg,iree-cpu", "--format", "sarif")
    assert proc.returncode == EXIT_NO_RUN and proc.stdout == "", proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "IREE CPU needs IREE" in line and "pip install 'torch-mlir-lens[iree]'" in line
    listed = without_iree("check", "model.py", "--targets", "iree-cpu", "--list")
    assert listed.returncode == 0 and listed.stdout.splitlines() == [
        "model.py::MLP", "model.py::TanhF64"]


def test_architectures_come_from_the_command_line_else_the_project(tmp_path: Path) -> None:
    cfg = parse_table({"ireeArchs": {"iree-cuda": "sm_86", "iree-rocm": "gfx942"}},
                      str(tmp_path / "pyproject.toml"))

    def archs(*items: str, targets: str = "iree-cuda,iree-rocm") -> dict[str, str]:
        given = CommandLine(paths=(".",), targets=targets, iree_arch=items)
        return dict(resolve_settings(given, cfg, str(tmp_path)).iree_archs)

    assert archs() == {"iree-cuda": "sm_86"}  # gfx942 is iree-rocm's default: no job says it
    assert cfg.editor_settings() == {"ireeArchs": {"iree-cuda": "sm_86", "iree-rocm": "gfx942"}}
    assert archs("iree-cuda=sm_89") == {"iree-cuda": "sm_89"}
    assert archs("gfx90a", targets="linalg,iree-rocm") == {"iree-rocm": "gfx90a"}
    for bad, words in (("sm_80", "expected TARGET=ARCH"), ("iree-cpu=znver4", "not among"),
                       ("iree-cuda=sm 80", "not a CUDA architecture name")):
        with pytest.raises(CheckInputError, match=words):
            archs(bad)
    with pytest.raises(ConfigError, match="ireeArchs: expected a table"):
        parse_table({"ireeArchs": ["sm_86"]}, str(tmp_path / "pyproject.toml"))


def test_each_iree_target_is_a_job_whose_failure_is_its_own() -> None:
    assert job_groups(["linalg", "iree-cpu", "tosa", "iree-rocm"]) == [
        ["linalg", "tosa"], ["iree-cpu"], ["iree-rocm"]]
    assert job_groups(["iree-cpu", "iree-rocm"]) == [["iree-cpu"], ["iree-rocm"]]
    late = LensError(ErrorKind.TIMEOUT, "timed out after 60 s")
    lowered = Lowered([LowerResult(module="M", target="linalg", ok=True)], {"iree-rocm": late})
    assert verdicts(["linalg", "iree-rocm"], lowered)["iree-rocm"] == {
        "ok": False, "unsupported": [], "error": "timed out after 60 s", "error_line": None}
    finding = make.of_error(late, module="M", module_file="m.py", module_line=3,
                            target="iree-rocm")
    assert (finding.rule, finding.target) == ("iree-rocm/timeout", "iree-rocm")
    assert finding.message == "IREE ROCm: timed out after 60 s"
    assert check_exit_code(bad_input=False, failure_kinds=[finding.kind]) == EXIT_NO_RUN

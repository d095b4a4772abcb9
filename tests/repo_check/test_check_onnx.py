"""`check` over a folder holding ONNX models beside Python files, as a process: `.onnx` files
collected by the same rules, one module each (`model.onnx::<graph>`), findings at their nodes in
every format (SARIF: the artifact with no region, the node a logical location), baselines keyed
by node, the ONNX fixes and dims carried to the models only, and IREE targets beside the
others. One lowering run (its report converted by `merge`); the rest answered from its cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.repo_check.test_check_cli import one_line_error, run
from tests.repo_check.test_check_examples import assert_valid_sarif
from tests.worker.models import onnx_models as models
from tests.worker.test_onnx_iree import _tanh_f64

MLP = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 16),)
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)

    def forward(self, x):
        return torch.relu(self.fc1(x))
'''
CHAIN = 'models/chain.onnx: node 2 "last" (com.microsoft.FastGelu, opset 1)'
# The run's settings: the `shapes` fix is a model's (a Python module would refuse it), the dim
# is the model's, the IREE target compiles each.
SETTINGS = ("--targets", "linalg,iree-cpu", "--rewrites", "shapes", "--dim", "batch=5")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("onnx-repo")
    folder = root / "models"
    (folder / "ignored").mkdir(parents=True)
    models.chain(folder, "FastGelu", domain="com.microsoft")
    models.dynamic_add(folder, external=True)
    _tanh_f64(folder)
    (folder / "mlp.py").write_text(MLP)
    shutil.copy(folder / "chain.onnx", folder / "ignored" / "chain.onnx")
    shutil.copy(folder / "chain.onnx", folder / "old.onnx")
    (folder / ".gitignore").write_text("ignored/\n")
    (root / "pyproject.toml").write_text('[tool.torch-mlir-lens]\nexclude = ["models/old.onnx"]\n')
    return root


@pytest.fixture(scope="module")
def report(repo: Path) -> dict[str, Any]:
    proc = run("check", "models", *SETTINGS, "--format", "json", "-o", "report.json",
               "--cache-dir", "cache", cwd=repo)
    assert proc.returncode == 1, proc.stderr[-3000:]
    data = json.loads((repo / "report.json").read_text())
    assert isinstance(data, dict)
    return data


def _merged(repo: Path, fmt: str) -> str:
    proc = run("merge", "report.json", "--format", fmt, cwd=repo)
    assert proc.returncode == 1, proc.stderr[-2000:]
    return proc.stdout


def test_onnx_files_are_collected_and_listed_by_their_graph(repo: Path) -> None:
    proc = run("check", "models", "--list", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["models/add.onnx::add", "models/chain.onnx::chain",
                                        "models/mlp.py::MLP", "models/tanh64.onnx::tanh64"]


def test_each_model_is_lowered_with_its_fixes_and_found_at_its_nodes(
        report: dict[str, Any]) -> None:
    modules = {m["name"]: m for m in report["modules"]}
    added = modules["add"]["targets"]["linalg"]
    assert added.pop("ops")["rejected"] == 0  # every op of its Linalg IR lowers
    assert added == {"ok": True, "unsupported": [], "error": None, "error_line": None,
                     "rewrites": ["shapes"]}
    assert modules["MLP"]["targets"]["linalg"]["ok"] and modules["add"]["line"] is None
    chain = {f["rule"]: f for f in modules["chain"]["findings"]}
    assert sorted(chain) == ["iree-cpu/onnx.FastGelu", "linalg/onnx.FastGelu"]
    assert chain["linalg/onnx.FastGelu"]["node"]["name"] == "last"
    (compile_error,) = modules["tanh64"]["findings"]
    assert compile_error["rule"] == "iree-cpu/compile-error"
    assert compile_error["node"]["name"] == "squash" and modules["tanh64"]["targets"][
        "linalg"]["ok"]
    assert report["config"]["dims"] == {"batch": 5}
    assert report["config"]["ireeArchs"] == {"iree-cpu": "host"}


def test_sarif_locates_a_node_by_its_artifact_and_a_logical_location(
        repo: Path, report: dict[str, Any]) -> None:
    log = json.loads(_merged(repo, "sarif"))
    assert_valid_sarif(log)
    run_ = log["runs"][0]
    results = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]): r
               for r in run_["results"]}
    chain = results[("linalg/onnx.FastGelu", "models/chain.onnx")]
    (location,) = chain["locations"]
    assert "region" not in location["physicalLocation"]
    node, graph = location["logicalLocations"]
    assert (node["name"], node["fullyQualifiedName"], graph["name"]) == ("last", "chain/last",
                                                                          "chain")
    assert node["properties"]["onnxNode"] == {"index": 2, "name": "last", "op_type": "FastGelu",
                                              "domain": "com.microsoft", "opset": 1}
    assert chain["message"]["text"].startswith(f"{CHAIN}: ")
    assert "relatedLocations" not in chain
    rules = {r["id"]: r["shortDescription"]["text"] for r in run_["tool"]["driver"]["rules"]}
    assert rules["iree-cpu/compile-error"] == ("IREE's compiler fails on the module's Linalg IR "
                                               "for IREE CPU")


def test_text_and_annotations_say_the_node(repo: Path, report: dict[str, Any]) -> None:
    text = _merged(repo, "text")
    assert '    linalg: node 2 "last" (com.microsoft.FastGelu, opset 1)\n' in text
    assert '    iree-cpu (node 2 "squash" (Tanh, opset 17)): IREE CPU cannot compile this ' \
           "node: " in text
    annotations = [ln for ln in _merged(repo, "github").splitlines()
                   if ln.startswith("::error file=models/chain.onnx,")]
    assert len(annotations) == 2 and all(f"::{CHAIN}: " in ln for ln in annotations)
    assert not any("line=" in ln for ln in annotations)  # a node is no line of the file


def test_the_baseline_keys_a_model_by_node(repo: Path, report: dict[str, Any]) -> None:
    proc = run("check", "models", *SETTINGS, "--cache-dir", "cache", "--write-baseline",
               cwd=repo)
    assert proc.returncode == 0, proc.stderr[-2000:]
    entries = json.loads((repo / "torch-mlir-lens-baseline.json").read_text())["entries"]
    assert {"file": "models/chain.onnx", "node": "last", "rule": "linalg/onnx.FastGelu"} \
        in entries and len(entries) == 3
    proc = run("check", "models", *SETTINGS, "--cache-dir", "cache", "--module", "chain",
               "--write-baseline", cwd=repo)
    assert "(2 entries of the modules checked; kept 1 entry of 1 file" in proc.stderr
    proc = run("check", "models", *SETTINGS, "--cache-dir", "cache", "--baseline",
               "torch-mlir-lens-baseline.json", cwd=repo)
    assert proc.returncode == 0, proc.stdout[-2000:]


def test_a_file_that_is_no_model_is_bad_input(tmp_path: Path) -> None:
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(models.SQUEEZENET.read_bytes()[:300])
    proc = run("check", "cut.onnx", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "cut.onnx: error: not an ONNX model (the file is cut short or in another format)" \
        in proc.stdout
    one_line_error(run("check", str(models.RELU), "--inputs", "(1,)", cwd=tmp_path),
                   "an ONNX model declares its inputs")

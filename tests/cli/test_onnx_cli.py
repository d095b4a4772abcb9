"""`lower`, `verify` and `export` on `.onnx` files, and `lower --via onnx`, as real processes:
node-located output and JSON, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_cli import assert_one_line_error, run_cli
from tests.worker.models import onnx_models as models


def test_lower_locates_by_node_in_text_and_json(tmp_path: Path) -> None:
    path = models.chain(tmp_path, "FastGelu", domain="com.microsoft")
    proc = run_cli("lower", str(path), "--target", "tosa")
    assert proc.returncode == 1, proc.stderr
    assert "Partial TOSA lowering: 1 node holds" in proc.stdout
    assert "chain.onnx: node 2: error: `com.microsoft.FastGelu` node \"last\" (opset 1) cannot " \
           "be lowered to TOSA" in proc.stderr
    proc = run_cli("lower", str(path), "--target", "linalg", "--json")
    data = json.loads(proc.stdout)
    (diag,) = data["diagnostics"]
    assert diag["node"] == {"index": 2, "name": "last", "op_type": "FastGelu",
                            "domain": "com.microsoft", "opset": 1}
    assert diag["line"] == 2 and data["onnx"]["graph"] == "chain"
    assert [n["op_type"] for n in data["onnx"]["nodes"]] == ["Relu", "FastGelu", "Relu"]


def test_verify_and_export_an_onnx_file(tmp_path: Path) -> None:
    proc = run_cli("verify", str(models.RELU), "--target", "stablehlo")
    assert proc.returncode == 0, proc.stderr
    assert "matches onnxruntime" in proc.stdout
    out = tmp_path / "relu.mlir"
    proc = run_cli("export", str(models.RELU), "--target", "tosa", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "tosa.clamp" in out.read_text()


def test_bad_onnx_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "cut.onnx"
    bad.write_bytes(models.SQUEEZENET.read_bytes()[:300])
    assert_one_line_error(run_cli("lower", str(bad)), 2, "not an ONNX model")
    assert_one_line_error(run_cli("lower", str(models.RELU), "--line", "3"), 2,
                          "an ONNX model has no lines")


def test_lower_via_onnx_places_ops_at_the_python_lines(tmp_path: Path) -> None:
    source = tmp_path / "mlp.py"
    source.write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "# torch-mlir-lens: inputs=(torch.randn(2, 16),)\n"
        "class MLP(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc1 = nn.Linear(16, 32)\n"
        "        self.head = nn.Linear(32, 4)\n\n"
        "    def forward(self, x):\n"
        "        x = torch.relu(self.fc1(x))\n"
        "        return self.head(x)\n")
    proc = run_cli("lower", str(source), "--via", "onnx", "--target", "tosa", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["stats"]["via"] == "onnx" and "tosa." in data["ir"]
    assert {m["line"] for m in data["map"]} == {13, 14}

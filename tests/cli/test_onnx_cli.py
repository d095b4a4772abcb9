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


def test_a_model_onnxruntime_cannot_run_is_verified_by_onnx_s_evaluator() -> None:
    """The onnx wheel's opset-6 Gemm (test_Linear): onnxruntime has no kernel for it, so the
    reference is the onnx package's own evaluator, named in the verdict."""
    model = models.DATA / "pytorch-converted" / "test_Linear" / "model.onnx"
    proc = run_cli("verify", str(model), "--target", "linalg", "--rewrites", "auto", "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["ok"] and "matches onnx's reference evaluator" in data["message"]
    assert data["inputs_source"].startswith("test data")


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


def _dense(tmp: Path) -> Path:
    """x[4,8] → MatMul (weights in the file) → Add → Tanh → y: numbers worth comparing."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    weights = [numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "w"),
               numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "b")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="project"),
             helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
             helper.make_node("Tanh", ["a"], ["y"], name="squash")]
    graph = helper.make_graph(
        nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])], initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return models.save(model, tmp / "dense.onnx")


def test_verify_and_export_an_onnx_file_on_iree(tmp_path: Path) -> None:
    """IREE CPU's compiled model against onnxruntime; its .vmfb runs in iree.runtime alone
    (entry `main`, weights inside) and matches onnxruntime; a node IREE cannot compile is
    named; a GPU target compiles and is not run here (no verdict, exit 3)."""
    import numpy as np
    import onnxruntime as ort
    from iree import runtime as rt

    path = _dense(tmp_path)
    proc = run_cli("verify", str(path), "--target", "iree-cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] and "matches onnxruntime" in data["message"]
    assert data["outputs"][0]["shape"] == [4, 5]

    out = tmp_path / "dense.vmfb"
    proc = run_cli("export", str(path), "--target", "iree-cpu", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    config = rt.Config("local-task")
    module = rt.VmModule.mmap(config.vm_instance, str(out))
    context = rt.SystemContext(vm_modules=[module], config=config)
    got = context.modules[module.name]["main"](x).to_host()
    (want,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5) and np.abs(want).max() > 0.1

    tanh64 = tmp_path / "tanh64.onnx"  # IREE's CPU has no f64 tanh to link
    from tests.worker.test_onnx_iree import _tanh_f64

    _tanh_f64(tmp_path)
    proc = run_cli("verify", str(tanh64), "--target", "iree-cpu")
    assert proc.returncode == 1, proc.stderr
    assert "tanh64.onnx: node 2: error: IREE CPU cannot compile this node:" in proc.stdout
    proc = run_cli("export", str(tanh64), "--target", "iree-cpu", "-o",
                   str(tmp_path / "t.vmfb"))
    assert proc.returncode == 1 and not (tmp_path / "t.vmfb").exists()
    assert 'cannot compile node 2 "squash" (Tanh, opset 17)' in proc.stderr

    proc = run_cli("verify", str(path), "--target", "iree-cuda")
    assert proc.returncode == 3, proc.stderr
    assert "compiled, not run: no device" in proc.stdout


def _grouped(tmp: Path) -> Path:
    """Named as torch.onnx.export names nodes (`/encoder/fc/MatMul`), ending in a node no
    backend takes (com.microsoft FastGelu) and a Relu that fails only because of it."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    weights = [numpy_helper.from_array(np.ones((8, 4), np.float32), "w")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="/encoder/fc/MatMul"),
             helper.make_node("Relu", ["m"], ["r"], name="/encoder/act/Relu"),
             helper.make_node("FastGelu", ["r"], ["g"], name="/head/FastGelu",
                              domain="com.microsoft"),
             helper.make_node("Relu", ["g"], ["y"], name="/head/Relu_1")]
    graph = helper.make_graph(
        nodes, "grouped", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    return models.save(model, tmp / "grouped.onnx")


def test_graph_of_an_onnx_model(tmp_path: Path) -> None:
    """`graph model.onnx`: the model drawn as a module is, each node at its position with its
    verdict per backend, the values between nodes with their types, the names' folders as
    groups, each node's Torch IR lines."""
    path = _grouped(tmp_path)
    out = tmp_path / "g.json"
    proc = run_cli("graph", str(path), "--targets", "linalg,tosa", "--format", "json",
                   "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert (data["module"], data["targets"]) == ("grouped", ["linalg", "tosa"])
    nodes = {n["id"]: n for n in data["nodes"]}
    assert [nodes[f"n{i}"]["op"] for i in range(1, 5)] == \
        ["MatMul", "Relu", "com.microsoft.FastGelu", "Relu"]
    assert {t: v["status"] for t, v in nodes["n3"]["targets"].items()} == \
        {"linalg": "rejected", "tosa": "rejected"}
    assert "com.microsoft.FastGelu" in nodes["n3"]["targets"]["tosa"]["why"]
    assert nodes["n4"]["targets"]["tosa"]["status"] == "knock-on"
    assert nodes["n1"]["targets"]["linalg"]["status"] == "lowered"
    assert (nodes["n1"]["line"], nodes["n1"]["shape"], nodes["n1"]["dtype"]) == (1, [2, 4], "f32")
    ir = data["ir"].splitlines()
    assert nodes["n1"]["ir_lines"] and all("torch.aten" in ir[n - 1]
                                           for n in nodes["n1"]["ir_lines"])
    edges = {(e["from"], e["to"]): e["type"] for e in data["edges"]}
    assert edges == {("in:x", "n1"): "f32[2, 8]", ("n1", "n2"): "f32[2, 4]",
                     ("n2", "n3"): "f32[2, 4]", ("n3", "n4"): "none", ("n4", "out"): "f32[2, 4]"}
    groups = {g["id"]: g for g in data["groups"]}
    assert {g["path"] for g in groups.values()} == {"encoder", "encoder.fc", "encoder.act",
                                                    "head"}
    assert groups[nodes["n1"]["group"]]["parent"] == "g:/encoder"
    assert nodes["n3"]["group"] == "g:/head"
    assert data["verdicts"]["tosa"]["ok"] is False

"""An ONNX model at the IREE targets, in the worker (in-process, real IREE): IREE's answer
beside the other targets' in one job, its errors and torch-mlir's culprits at their nodes."""

from __future__ import annotations

from pathlib import Path

from onnx import TensorProto, helper
from tests.worker.models import onnx_models as models
from tests.worker.test_onnx_lowering import lowered


def _tanh_f64(tmp: Path) -> Path:
    """x → Relu → Tanh "squash" → y in float64: IREE's CPU has no f64 tanh to link."""
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [4, 8])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first"),
             helper.make_node("Tanh", ["r"], ["y"], name="squash")]
    model = helper.make_model(helper.make_graph(nodes, "tanh64", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    return models.save(model, tmp / "tanh64.onnx")


def test_iree_targets_answer_beside_the_others_with_errors_at_their_nodes(
        tmp_path: Path) -> None:
    linalg, cpu, rocm = lowered(_tanh_f64(tmp_path), "linalg", "iree-cpu", "iree-rocm")
    assert linalg.ok and rocm.ok, rocm.diagnostics
    assert not cpu.ok and cpu.onnx is not None and cpu.onnx.graph == "tanh64"
    (error,) = cpu.diagnostics
    assert (error.kind, error.line) == ("compile-error", 2)
    assert error.node is not None and (error.node.name, error.node.op_type) == ("squash", "Tanh")
    assert "IREE CPU cannot compile this node: " in error.message
    assert "undefined symbol: tanh" in error.message
    assert cpu.stats["iree"]["compiled"] is False and rocm.stats["iree"]["compiled"]


def test_a_node_torch_mlir_rejects_is_the_iree_targets_culprit_and_weights_stay_mapped(
        tmp_path: Path) -> None:
    (cpu,) = lowered(models.chain(tmp_path, "FastGelu", domain="com.microsoft"), "iree-cpu")
    (culprit,) = cpu.diagnostics
    assert (cpu.target, culprit.target, culprit.line) == ("iree-cpu", "iree-cpu", 2)
    assert culprit.node is not None and culprit.node.op_type == "FastGelu"
    (added,) = lowered(models.dynamic_add(tmp_path, external=True), "iree-cpu",
                       dims={"batch": 2})
    assert added.ok, added.diagnostics
    assert [d["lines"][0]["line"] for d in added.stats["dispatches"]] == [1]  # node 1, the Add

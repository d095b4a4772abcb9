"""ONNX models lowered in the worker (in-process): the real importer of the torch-mlir wheel, its
pipelines and onnxruntime; every culprit at its node, partial IR, fixes proven, Verify."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.worker.models import onnx_models as models

from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.protocol.verify_results import VerifyResult
from torch_mlir_lens.source.onnx_files import THE_GRAPH, stand_in_text
from torch_mlir_lens.worker.job_handlers import run_job


def job(path: Path, op: str = "lower", **fields: Any) -> dict[str, Any]:
    return {"id": 1, "op": op, "path": str(path), "module": THE_GRAPH,
            "text": stand_in_text(str(path)), **fields}


def lowered(path: Path, *targets: str, **fields: Any) -> list[LowerResult]:
    reply = run_job(job(path, targets=list(targets), **fields))
    assert reply["ok"], reply
    return [LowerResult.from_json(r) for r in reply["result"]["results"]]


def test_a_model_torch_mlir_takes_lowers_everywhere_mapped_to_its_node() -> None:
    for result in lowered(models.RELU, "raw", "torch", "linalg", "tosa", "stablehlo"):
        assert result.ok, (result.target, result.diagnostics)
        assert result.onnx is not None and result.onnx.graph == "SingleRelu"
        assert [n.op_type for n in result.onnx.nodes] == ["Relu"]
        assert {m.line for m in result.map} == {1}, result.map  # node 1, the Relu
    linalg = lowered(models.RELU, "linalg")[0]
    assert "linalg.generic" in linalg.ir and "onnx" not in linalg.ir


def test_an_unknown_node_is_a_culprit_on_every_backend_with_the_rest_lowered(
        tmp_path: Path) -> None:
    """A com.microsoft FastGelu: each backend names node 2 (not the graph), says why, keeps
    it as a call and lowers the two Relus; the Relu after it fails only because of it."""
    path = models.chain(tmp_path, "FastGelu", domain="com.microsoft")
    for result in lowered(path, "linalg", "tosa", "stablehlo"):
        assert not result.ok
        (culprit,) = result.diagnostics
        assert culprit.line == 2 and culprit.node is not None
        assert (culprit.node.name, culprit.node.op_type, culprit.node.domain) == (
            "last", "FastGelu", "com.microsoft")
        assert "no conversion of `com.microsoft.FastGelu`" in culprit.message
        assert [k["line"] for k in culprit.knock_on or []] == [3]
        assert result.partial, result.ir
        assert "call @onnx.FastGelu" in result.ir and "node 2:" in result.ir
    linalg = lowered(path, "linalg")[0]
    assert linalg.ir.count("arith.select") == 1  # the first Relu lowered (the third waits)


def test_a_backend_refusal_names_the_node_and_why(tmp_path: Path) -> None:
    """Hardmax lowers to Linalg and TOSA; StableHLO rejects the op it becomes, at node 2."""
    path = models.chain(tmp_path, "Hardmax")
    linalg, tosa, stablehlo = lowered(path, "linalg", "tosa", "stablehlo")
    assert linalg.ok and tosa.ok
    assert not stablehlo.ok and stablehlo.partial
    (culprit,) = stablehlo.diagnostics
    assert culprit.line == 2 and culprit.node is not None and culprit.node.op_type == "Hardmax"
    assert "cannot be lowered to StableHLO: it becomes `aten." in culprit.message
    assert culprit.target == "stablehlo"


def test_an_old_opset_gets_the_opset_fix_proven_and_it_lowers_through_it() -> None:
    """SqueezeNet of opset 9: every unconverted node named, the opset upgrade offered proven
    against onnxruntime; with it, Linalg lowers and Verify matches onnxruntime."""
    before = lowered(models.SQUEEZENET, "linalg")[0]
    assert not before.ok
    names = {d.node.op_type for d in before.diagnostics if d.node is not None}
    assert {"MaxPool", "Concat"} <= names
    assert all(d.node is not None and d.node.opset == 9 for d in before.diagnostics)
    assert "a proven way past it: --rewrites opset" in before.diagnostics[0].message
    after = lowered(models.SQUEEZENET, "linalg", rewrites=["opset"])[0]
    assert after.ok and after.rewrites == ["opset"]
    assert after.onnx is not None and after.onnx.fixes == ["opset"]
    reply = run_job(job(models.SQUEEZENET, "verify", rewrites=["opset"]))
    verdict = VerifyResult.from_json(reply["result"])
    assert verdict.ok, verdict.message
    assert verdict.inputs_source == "generated"


def test_verify_uses_the_test_data_beside_the_model_and_onnxruntime() -> None:
    reply = run_job(job(models.RELU, "verify", target="tosa"))
    verdict = VerifyResult.from_json(reply["result"])
    assert verdict.ok and "onnxruntime" in verdict.message
    assert verdict.inputs_source == "test data (test_data_set_0)"


def test_dynamic_dims_take_the_sizes_given_and_external_weights_are_mapped(
        tmp_path: Path) -> None:
    path = models.dynamic_add(tmp_path, external=True)
    (tosa,) = lowered(path, "tosa", keep_weights=True)
    assert tosa.ok and "tensor<?x4xf32>" in tosa.ir
    assert "0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00" in tosa.ir  # from add.bin
    reply = run_job(job(path, "verify", dims={"batch": 3}))
    verdict = VerifyResult.from_json(reply["result"])
    assert verdict.ok and verdict.outputs[0].shape == [3, 4]
    (static,) = lowered(path, "tosa", rewrites=["shapes"], dims={"batch": 5})
    assert static.ok and "tensor<5x4xf32>" in static.ir


def test_a_wrong_graph_name_or_fix_is_bad_input() -> None:
    reply = run_job({**job(models.RELU, targets=["linalg"]), "module": "Other"})
    assert not reply["ok"] and reply["error"]["kind"] == "unknown-module"
    assert "'SingleRelu'" in reply["error"]["message"]
    reply = run_job(job(models.RELU, targets=["linalg"], rewrites=["erfinv"]))
    assert not reply["ok"] and "opset, shapes, fold" in reply["error"]["message"]


@pytest.mark.parametrize(("make", "words"), [
    (lambda p: p.write_bytes(models.SQUEEZENET.read_bytes()[:500]), "cut short"),
    (lambda p: p.write_text("print('hello')\n"), "not an ONNX model"),
    (lambda p: p.write_bytes(b""), "the file is empty"),
])
def test_bad_files_are_one_located_message(tmp_path: Path, make: Any, words: str) -> None:
    path = tmp_path / "bad.onnx"
    make(path)
    reply = run_job(job(path, targets=["linalg"]))
    assert not reply["ok"] and reply["error"]["kind"] == "load-error"
    assert words in reply["error"]["message"] and reply["error"]["file"] == str(path)


def test_an_unknown_opset_and_a_missing_external_file_are_refused(tmp_path: Path) -> None:
    model = models.onnx.load(str(models.RELU))
    model.opset_import[0].version = 99
    path = models.save(model, tmp_path / "future.onnx")
    reply = run_job(job(path, targets=["linalg"]))
    assert "unknown opset: the model uses ONNX opset 99" in reply["error"]["message"]
    path = models.dynamic_add(tmp_path, external=True)
    (tmp_path / "add.bin").unlink()
    reply = run_job(job(path, targets=["linalg"]))
    assert not reply["ok"]
    assert "external data file 'add.bin' of the weight 'w' is missing" in \
        reply["error"]["message"]

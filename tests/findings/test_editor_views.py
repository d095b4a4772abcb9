"""The words and views the editor shows of IREE's and ONNX's results (findings/iree.py,
findings/onnx_verdicts.py), from results as the worker sends them."""

from __future__ import annotations

from torch_mlir_lens.findings import iree, onnx_verdicts
from torch_mlir_lens.protocol.onnx_graphs import OnnxGraph
from torch_mlir_lens.protocol.results import LowerResult

PATH = "/ws/mlp.py"
STATS = {
    "iree": {"compiled": True, "ran_here": False, "device": "hip"},
    "dispatches": [
        {"index": 0, "name": "main_dispatch_0", "entry": "main_dispatch_0_matmul_2x32x16_f32",
         "lines": [{"file": PATH, "line": 23}, {"file": PATH, "line": 24}], "ops": 5},
        {"index": 1, "name": "main_dispatch_1", "entry": "main_dispatch_1_softmax",
         "lines": [{"file": PATH, "line": 24}], "ops": 3,
         "library_lines": [{"file": "/site/modeling_x.py", "line": 165}]},
    ],
    "line_dispatches": [{"file": PATH, "line": 24, "dispatches": [0, 1]},
                        {"file": PATH, "line": 23, "dispatches": [0]}],
    "speed": {"target": "iree-cpu", "compiled_ms": 0.0439, "eager_ms": 19.77, "threads": 2},
    "line_costs": [{"file": PATH, "line": 24, "ms": 0.00014, "share": 0.3936}],
}


def test_speed_and_cost_words() -> None:
    assert iree.speed_words(STATS["speed"]) == "IREE CPU 0.0439 ms · eager 19.8 ms (2 threads)"
    assert iree.speed_words(STATS["speed"], threads=False) == "IREE CPU 0.0439 ms · eager 19.8 ms"
    cost = iree.line_cost(STATS, PATH, 24)
    assert cost is not None and iree.cost_words(cost).startswith("39% of the compiled module")
    assert iree.line_cost(STATS, PATH, 23) is None
    assert iree.not_run_words(STATS) == "compiled, not run: no device"
    assert iree.not_run_words({"iree": {"compiled": True, "ran_here": True}}) is None


def test_a_line_s_dispatches_with_their_lines_and_library_lines() -> None:
    found = iree.dispatches_of(STATS, PATH, 24)
    assert [d["index"] for d in found] == [0, 1]
    assert iree.dispatch_words(found[0], PATH) == \
        "dispatch 0 `@main_dispatch_0_matmul_2x32x16_f32` with lines 23, 24"
    assert iree.dispatch_words(found[1], PATH) == \
        "dispatch 1 `@main_dispatch_1_softmax` (modeling_x.py:165)"
    assert iree.dispatches_of(STATS, PATH, 99) == []


MODEL = "/ws/chain.onnx"
RAW_IR = "\n".join((
    "module {",
    "  func.func @chain(%arg0: !torch.vtensor<[?,3],f32>) -> !torch.vtensor<[?,3],f32> {",
    '    %0 = torch.operator "onnx.Relu"(%arg0) : (!torch.vtensor<[?,3],f32>) -> '
    "!torch.vtensor<[?,3],f32>",
    '    %1 = torch.operator "onnx.Split"(%0) {torch.onnx.axis = 1 : si64} : '
    "(!torch.vtensor<[?,3],f32>) -> (!torch.vtensor<[?,1],f32>, !torch.vtensor<[?,2],f32>)",
    '    %2 = torch.operator "onnx.FastGelu"(%1#0) : (!torch.vtensor<[?,1],f32>) -> !torch.none',
    "    return %0 : !torch.vtensor<[?,3],f32>",
    "  }",
    "}",
))


def _result(target: str, **data: object) -> LowerResult:
    return LowerResult.from_json({"module": "chain", "target": target, **data})


def _graph() -> OnnxGraph:
    return OnnxGraph.from_json({"graph": "chain", "nodes": [
        {"index": i, "name": n, "op_type": op, "opset": 17}
        for i, (n, op) in enumerate((("a", "Relu"), ("b", "Split"), ("c", "FastGelu"),
                                     ("d", "Relu")), start=1)]})


def test_value_types_from_the_imported_ir() -> None:
    raw = _result("raw", ok=True, ir=RAW_IR, map=[
        {"ir_line": n, "file": MODEL, "line": n - 2} for n in (3, 4, 5)])
    assert onnx_verdicts.value_types(raw, MODEL) == {
        1: (["f32[?,3]"], ["f32[?,3]"]),
        2: (["f32[?,3]"], ["f32[?,1]", "f32[?,2]"]),
        3: (["f32[?,1]"], ["none"]),
    }


def test_node_verdicts_per_backend() -> None:
    culprit = {"severity": "error", "message": "`FastGelu` node cannot be lowered",
               "kind": "unsupported-op", "file": MODEL, "line": 3, "op": "onnx.FastGelu",
               "cause": "`com.microsoft.FastGelu` node \"c\" (opset 1)",
               "reason": "torch-mlir has no conversion",
               "knock_on": [{"op": "onnx.Relu", "file": MODEL, "line": 4}]}
    results = {
        "linalg": _result("linalg", ok=False, partial=True, diagnostics=[culprit]),
        "tosa": _result("tosa", ok=True),
        "stablehlo": _result("stablehlo", ok=False, diagnostics=[
            {"severity": "error", "message": "the pipeline failed\nmore", "kind":
             "lowering-error", "file": None, "line": None}]),
    }
    rows = onnx_verdicts.rows(_graph(), results, MODEL, ["linalg", "tosa", "stablehlo"])
    states = [[(v.target, v.state) for v in r.verdicts] for r in rows]
    assert states[0] == [("linalg", "ok"), ("tosa", "ok"), ("stablehlo", "unknown")]
    assert states[2][0] == ("linalg", "rejected") and states[3][0] == ("linalg", "knock-on")
    assert rows[2].verdicts[0].why == "torch-mlir has no conversion"
    assert rows[3].verdicts[0].why == \
        "`onnx.Relu` fails only because of `com.microsoft.FastGelu` node \"c\" (opset 1)"
    assert rows[0].verdicts[2].why == "the pipeline failed"
    summary = {s.target: s for s in onnx_verdicts.summaries(results, MODEL, list(results))}
    assert (summary["linalg"].rejected, summary["linalg"].partial) == (1, True)
    assert summary["tosa"].ok and summary["stablehlo"].message == "the pipeline failed"

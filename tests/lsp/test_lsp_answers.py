"""The typed answers of `torchMlirLens/lower` and `/verify`, as the server's converter writes them.

In process, no server: results as the engine gives them → `lsp/wire/answers.py` → the JSON pygls
sends (its converter, then `json.dumps` with its serializer as the fallback). Field names are
the camelCase ones the client reads (`client/src/protocol.ts`); values keep their meaning.
"""

from __future__ import annotations

import enum
import json
import math
from typing import Any

import pytest
from pygls.protocol import JsonRPCResponseMessage

from torch_mlir_lens.lsp.wire import answers
from torch_mlir_lens.lsp.wire.convert import path_to_uri
from torch_mlir_lens.lsp.wire.json_rpc import lens_converter
from torch_mlir_lens.protocol.frames import FrameTable, SourceFrame
from torch_mlir_lens.protocol.results import (
    IrLineMapping,
    LensDiagnostic,
    LensError,
    LowerResult,
    PassIr,
    RelatedLocation,
)
from torch_mlir_lens.protocol.verify_results import VerifyResult

USER = "/proj/model.py"
LIB = "/venv/site-packages/transformers/layer.py"


def wire(result: Any) -> str:
    """The JSON text pygls writes for a response carrying `result`."""
    converter = lens_converter()

    def default(value: Any) -> Any:  # pygls's JsonRPCProtocol._serialize_message
        if hasattr(value, "__attrs_attrs__"):
            return converter.unstructure(value)
        if isinstance(value, enum.Enum):
            return value.value
        return value.__dict__

    return json.dumps(JsonRPCResponseMessage(id=1, jsonrpc="2.0", result=result),
                      default=default)


def sent(result: Any) -> Any:
    return json.loads(wire(result))["result"]


def lowered() -> LowerResult:
    frames = FrameTable()
    frames.add(2, [SourceFrame(LIB, 40, True), SourceFrame(USER, 7)])
    diag = LensDiagnostic(
        severity="error", message="`torch.roll` is not supported", file=USER, line=7,
        op="torch.aten.roll", target="tosa", related=[RelatedLocation(LIB, 40, "called here")],
        cause="`torch.roll`", ops=["torch.aten.roll"],
        knock_on=[{"op": "torch.aten.cat", "file": USER, "line": 8}, {"op": "x", "file": None,
                                                                     "line": None}],
    )
    return LowerResult(
        module="Net", target="tosa", ok=False, ir="func.func @main()\n  %0 = x\n",
        map=[IrLineMapping(2, USER, 7, 0), IrLineMapping(2, USER, 12, 1)],
        diagnostics=[diag],
        stats={"ops": 2, "mapped_ops": 1, "unmapped_op_names": ["x"], "ir_bytes": 24},
        timings={"load": 0.5, "total": 1.25}, passes=[PassIr("canonicalize", "ir after")],
        inputs_source="comment", frames=frames, partial=True,
    )


def test_lower_answer_fields_and_values() -> None:
    answer = sent(answers.lower_response(lowered()))
    user, lib = path_to_uri(USER), path_to_uri(LIB)
    assert answer == {
        "module": "Net", "target": "tosa", "ok": False, "ir": "func.func @main()\n  %0 = x\n",
        "map": [{"irLine": 2, "uri": user, "line": 7, "depth": 0},
                {"irLine": 2, "uri": user, "line": 12, "depth": 1}],
        "diagnostics": [{
            "severity": "error", "message": "`torch.roll` is not supported", "kind":
            "unsupported-op", "uri": user, "line": 7, "op": "torch.aten.roll",
            "target": "tosa", "related": [{"uri": lib, "line": 40, "message": "called here"}],
            "cause": "`torch.roll`", "ops": ["torch.aten.roll"],
            "knockOn": [{"op": "torch.aten.cat", "uri": user, "line": 8},
                        {"op": "x", "uri": None, "line": None}],
        }],
        "stats": {"ops": 2, "mappedOps": 1, "unmappedOpNames": ["x"], "irBytes": 24},
        "timings": {"load": 0.5, "total": 1.25},
        "inputsSource": "comment", "partial": True,
        "frames": {"files": [lib, user], "library": [0], "chains": [[0, 40, 1, 7]],
                   "rows": [[2, 0]]},
        "passes": [{"name": "canonicalize", "ir": "ir after"}],
    }


def test_a_plain_lower_answer_leaves_out_what_it_does_not_have() -> None:
    result = LowerResult("Net", "linalg", True, "ir", [IrLineMapping(1, USER, 3)])
    answer = sent(answers.lower_response(result))
    assert set(answer) == {"module", "target", "ok", "ir", "map", "diagnostics", "stats",
                           "timings", "inputsSource", "partial"}
    assert answer["inputsSource"] is None and answer["partial"] is False
    assert answer["map"] == [{"irLine": 1, "uri": path_to_uri(USER), "line": 3, "depth": 0}]


def test_an_error_answer_carries_the_error_and_its_one_diagnostic() -> None:
    err = LensError("load-error", "NameError: nope", file=USER, line=4)
    answer = sent(answers.lower_error("Net", "linalg", err))
    assert answer["ok"] is False and answer["ir"] == "" and answer["map"] == []
    assert answer["error"] == {"kind": "load-error", "message": "NameError: nope",
                               "uri": path_to_uri(USER), "line": 4}
    [diag] = answer["diagnostics"]
    assert (diag["kind"], diag["uri"], diag["line"], diag["target"]) == (
        "load-error", path_to_uri(USER), 4, "linalg")
    assert "related" in diag and diag["knockOn"] is None
    assert answer["stats"] == {} and answer["timings"] == {}
    assert "frames" not in answer and "passes" not in answer


def test_non_finite_stats_and_timings_stay_json() -> None:
    # Bare Infinity / NaN (what json.dumps writes) would make the client drop the answer.
    result = LowerResult("Net", "linalg", True, "ir", stats={"weight_bytes": math.inf},
                         timings={"total": math.nan, "load": -math.inf, "export": 0.5})
    text = wire(answers.lower_response(result))
    assert '"stats": {"weightBytes": "inf"}' in text
    assert '"timings": {"total": "nan", "load": "-inf", "export": 0.5}' in text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"not JSON: {c}"))


WORKER_VERIFY: dict[str, Any] = {  # a VerifyJob reply (`worker.verify.VerifyResult.to_json()`)
    "module": "Net", "ok": False,
    "outputs": [{"index": 0, "shape": [2, 3], "dtype": "float32", "max_abs_err": "inf",
                 "max_rel_err": "nan", "worst_index": [1, 2], "ok": False,
                 "message": "differs", "rtol": 1e-5, "atol": 1e-6}],
    "rtol": None, "atol": 1e-6,
    "timings": {"lower_llvm": 0.25, "jit": 0.5, "total": 1.0},
    "diagnostics": [{"severity": "error", "message": "m", "kind": "unsupported-op",
                     "file": USER, "line": 3, "op": "torch.aten.roll", "target": "llvm",
                     "cause": "c", "ops": ["torch.aten.roll"],
                     "knock_on": [{"op": "torch.aten.cat", "file": USER, "line": 4}]},
                    {"severity": "warning", "message": "w", "kind": "lowering-error",
                     "file": None, "line": None, "op": None, "target": None,
                     "related": [{"file": LIB, "line": 9, "message": "in the library"}],
                     "cause": None, "ops": None, "knock_on": None}],
    "message": "✗ differs: output 0", "kind": "verify-mismatch", "max_abs_err": "inf",
    "divergence": {"file": USER, "line": 5, "shape": [2], "dtype": "float32",
                   "max_abs_err": 0.5, "worst_index": [1], "message": "line 5 differs"},
}


def test_verify_answer_is_the_worker_reply_in_camel_case() -> None:
    answer = sent(answers.verify_response(VerifyResult.from_json(WORKER_VERIFY)))
    assert answer == {
        "module": "Net", "ok": False,
        "outputs": [{"index": 0, "shape": [2, 3], "dtype": "float32", "maxAbsErr": "inf",
                     "maxRelErr": "nan", "worstIndex": [1, 2], "ok": False,
                     "message": "differs", "rtol": 1e-5, "atol": 1e-6}],
        "rtol": None, "atol": 1e-6,
        "timings": {"lowerLlvm": 0.25, "jit": 0.5, "total": 1.0},
        "diagnostics": [{"severity": "error", "message": "m", "kind": "unsupported-op",
                         "file": USER, "line": 3, "op": "torch.aten.roll", "target": "llvm",
                         "cause": "c", "ops": ["torch.aten.roll"],
                         "knockOn": [{"op": "torch.aten.cat", "file": USER, "line": 4}]},
                        {"severity": "warning", "message": "w", "kind": "lowering-error",
                         "file": None, "line": None, "op": None, "target": None,
                         "related": [{"file": LIB, "line": 9, "message": "in the library"}],
                         "cause": None, "ops": None, "knockOn": None}],
        "message": "✗ differs: output 0", "kind": "verify-mismatch", "maxAbsErr": "inf",
        "divergence": {"file": USER, "line": 5, "shape": [2], "dtype": "float32",
                       "maxAbsErr": 0.5, "worstIndex": [1], "message": "line 5 differs"},
        "sizes": [],
    }


def test_verify_answer_reports_each_size_with_the_dims_names_as_written() -> None:
    out = {"index": 0, "shape": [3, 5], "dtype": "float32", "max_abs_err": 0.5,
           "max_rel_err": 0.1, "worst_index": [2, 4], "ok": False, "message": "differs",
           "rtol": 1e-5, "atol": 1e-4}
    reply = {**WORKER_VERIFY, "sizes": [
        {"dims": [{"name": "batch_size", "size": 2}, {"name": "seq", "size": 8}],
         "example": True, "ok": True, "message": "✓ matches eager (max err 1e-07)",
         "max_abs_err": 1e-7, "outputs": []},
        {"dims": [{"name": "batch_size", "size": 3}, {"name": "seq", "size": 5}],
         "example": False, "ok": False, "message": "✗ differs: output 0, max err 0.5",
         "max_abs_err": "inf", "outputs": [out]}]}
    sizes = sent(answers.verify_response(VerifyResult.from_json(reply)))["sizes"]
    assert [s["dims"] for s in sizes] == [[{"name": "batch_size", "size": 2},
                                           {"name": "seq", "size": 8}],
                                          [{"name": "batch_size", "size": 3},
                                           {"name": "seq", "size": 5}]]
    assert [(s["example"], s["ok"], s["maxAbsErr"]) for s in sizes] == [
        (True, True, 1e-7), (False, False, "inf")]
    assert sizes[1]["outputs"][0]["worstIndex"] == [2, 4]


@pytest.mark.parametrize("value, text", [("inf", '"inf"'), ("nan", '"nan"'),
                                         ("-inf", '"-inf"'), (0.25, "0.25")])
def test_verify_errors_stay_strings_when_not_finite(value: Any, text: str) -> None:
    # JSON has no inf/nan: the worker sends them as strings, and so does the answer.
    reply = {**WORKER_VERIFY, "max_abs_err": value, "divergence": None}
    reply["outputs"] = [{**WORKER_VERIFY["outputs"][0], "max_abs_err": value}]
    written = wire(answers.verify_response(VerifyResult.from_json(reply)))
    assert f'"maxAbsErr": {text}, "maxRelErr"' in written
    assert f'"maxAbsErr": {text}, "divergence": null' in written
    json.loads(written)  # valid JSON


def test_a_matching_verify_answer_keeps_every_field() -> None:
    reply = {"module": "M", "ok": True, "outputs": [], "rtol": None, "atol": None,
             "timings": {}, "diagnostics": [], "message": "✓ matches eager", "kind": None,
             "max_abs_err": 0.0, "divergence": None}
    assert sent(answers.verify_response(VerifyResult.from_json(reply))) == {
        "module": "M", "ok": True, "outputs": [], "rtol": None, "atol": None, "timings": {},
        "diagnostics": [], "message": "✓ matches eager", "kind": None, "maxAbsErr": 0.0,
        "divergence": None, "sizes": []}

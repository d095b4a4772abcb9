"""LowerResult's JSON: the worker's compact source map reads back to the same entries."""

from torch_mlir_lens.protocol.results import IrLineMapping, LowerResult


def test_compact_and_plain_maps_read_back_the_same() -> None:
    result = LowerResult(module="M", target="linalg", ok=True, ir="%0 = ...\n", map=[
        IrLineMapping(1, "/w/model.py", 12, 0), IrLineMapping(1, "/w/layers.py", 4, 1),
        IrLineMapping(2, "/w/model.py", 13, 0),
    ])
    compact = result.to_json(compact_map=True)
    assert compact["map"]["files"] == ["/w/model.py", "/w/layers.py"]  # each path once
    assert LowerResult.from_json(compact).map == result.map
    assert LowerResult.from_json(result.to_json()).map == result.map
    assert result.to_json()["map"][1] == {"ir_line": 1, "file": "/w/layers.py", "line": 4,
                                          "depth": 1}

"""Verify's words on a module's graph (findings/graph_verify.py): its verdict on the graph, the
first diverging line's mismatch on that line's ops (the op whose value was compared said so),
another located problem at its line, an unlocated mismatch on the outputs; a match marks no
op. From results as the worker sends them."""

from __future__ import annotations

from torch_mlir_lens.findings.graph_verify import COMPARED, mark_verify
from torch_mlir_lens.protocol.graph import GraphNode, ModuleGraph
from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic
from torch_mlir_lens.protocol.verify_results import Divergence, VerifyResult

PATH = "/ws/noisy.py"
DIVERGES = "compiled values first differ from eager here: float32 [2, 8], max err 0.97 at [1, 3]"


def _graph() -> ModuleGraph:
    def node(id_: str, op: str, line: int | None, shape: list[int | str] | None = None,
             dtype: str | None = "f32") -> GraphNode:
        return GraphNode(id=id_, op=op, name=id_, file=PATH, line=line, shape=shape,
                         dtype=dtype)

    return ModuleGraph(module="Noisy", file=PATH, targets=["linalg"], nodes=[
        node("x", "input", None, [2, 8]),
        node("mul", "aten.mul.Tensor", 8, [2, 8]),
        node("rand_like", "aten.rand_like", 9, [2, 8]),
        node("add", "aten.add.Tensor", 9, [2, 8]),
        node("sum", "aten.sum", 9, [], dtype="f32"),
        node("sub", "aten.sub.Tensor", 10, [2, 8]),
        node("output", "output", None, [2, 8]),
    ])


def _mismatch(divergence: Divergence | None) -> VerifyResult:
    result = VerifyResult(module="Noisy", ok=False, kind=ErrorKind.VERIFY_MISMATCH,
                          message="✗ differs: output 0, max err 0.97 at [1, 3]",
                          divergence=divergence)
    if divergence is not None:  # as the worker adds it (verify/job.py)
        result.message += f" — first differs at line {divergence.line}"
        result.diagnostics.insert(0, LensDiagnostic(
            severity="error", message=divergence.message, kind=ErrorKind.VERIFY_MISMATCH,
            file=divergence.file, line=divergence.line, target="llvm"))
    return result


def test_the_first_diverging_line_marks_its_ops_and_the_compared_value() -> None:
    graph = _graph()
    divergence = Divergence(file=PATH, line=9, shape=[2, 8], dtype="float32", max_abs_err=0.97,
                            worst_index=[1, 3], message=DIVERGES)
    marked = mark_verify(graph, _mismatch(divergence))
    assert [n.id for n in marked] == ["rand_like", "add", "sum"]
    by_id = {n.id: n for n in graph.nodes}
    # The line's last value of the diverging shape and dtype was the one compared.
    assert by_id["add"].verify == f"✗ {DIVERGES}{COMPARED}"
    assert by_id["rand_like"].verify == f"✗ {DIVERGES}"
    assert by_id["sum"].verify == f"✗ {DIVERGES}"
    assert by_id["mul"].verify is None and by_id["output"].verify is None
    assert graph.verify == {"ok": False, "line": 9, "message":
                            "✗ differs: output 0, max err 0.97 at [1, 3] — first differs at "
                            "line 9"}
    # It travels with the graph (the page reads the JSON).
    again = ModuleGraph.from_json(graph.to_json())
    assert again.verify == graph.verify
    assert {n.id: n.verify for n in again.nodes} == {n.id: n.verify for n in graph.nodes}


def test_an_unlocated_mismatch_marks_the_outputs_and_a_match_marks_nothing() -> None:
    graph = _graph()
    assert [n.id for n in mark_verify(graph, _mismatch(None))] == ["output"]
    assert graph.nodes[-1].verify == "✗ differs: output 0, max err 0.97 at [1, 3]"

    graph = _graph()
    ok = VerifyResult(module="Noisy", ok=True, message="✓ matches eager (max err 2e-07)")
    assert mark_verify(graph, ok) == []
    assert graph.verify == {"ok": True, "message": "✓ matches eager (max err 2e-07)",
                            "line": None}
    assert all(n.verify is None for n in graph.nodes)
    assert "verify" not in _graph().to_json()  # no Verify, no key


def test_a_located_error_marks_its_line_and_an_unlocated_one_nothing() -> None:
    graph = _graph()
    failed = VerifyResult(module="Noisy", ok=False, kind=ErrorKind.LOWERING_ERROR,
                          message="✗ the LLVM lowering failed", diagnostics=[LensDiagnostic(
                              severity="error", message="failed to legalize `aten.sub`\nmore",
                              kind=ErrorKind.LOWERING_ERROR, file=PATH, line=10,
                              op="torch.aten.sub.Tensor")])
    assert [n.id for n in mark_verify(graph, failed)] == ["sub"]
    assert graph.nodes[5].verify == "✗ failed to legalize `aten.sub`"

    graph = _graph()
    crashed = VerifyResult(module="Noisy", ok=False, kind=ErrorKind.VERIFY_ERROR,
                           message="✗ the JIT failed")
    assert mark_verify(graph, crashed) == []
    assert graph.verify is not None and graph.verify["message"] == "✗ the JIT failed"

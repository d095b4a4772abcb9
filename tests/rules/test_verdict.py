"""The verdict rule (rules/verdict.py) and its readers: `check`'s JSON and the editor's
verdict lens."""

from __future__ import annotations

from torch_mlir_lens.lsp.document import verdict_of
from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LowerResult
from torch_mlir_lens.rules.verdict import backend_verdict, verdict_json


def _unsupported(op: str, line: int, cause: str | None = None) -> LensDiagnostic:
    return LensDiagnostic(severity="error", message=f"failed to legalize {op}", op=op,
                          line=line, target="tosa", cause=cause)


def test_ok() -> None:
    result = LowerResult(module="M", target="linalg", ok=True, ir="module {}")
    verdict = backend_verdict(result)
    assert verdict.ok and not verdict.failed and verdict.error is None
    assert verdict_json(result) == {"ok": True, "unsupported": [], "error": None,
                                    "error_line": None}
    assert verdict_of(result).ok


def test_unsupported_ops_are_to_blame() -> None:
    result = LowerResult(module="M", target="tosa", ok=False, diagnostics=[
        _unsupported("torch.aten.roll", 12, cause="`torch.roll`"),
        _unsupported("torch.aten.erfinv", 14),
        # the listing ran out of time: a warning, not an op to blame
        LensDiagnostic(severity="warning", message="listing stopped", target="tosa"),
    ])
    verdict = backend_verdict(result)
    assert not verdict.ok and not verdict.failed
    assert [d.line for d in verdict.culprits] == [12, 14]
    assert verdict_json(result)["unsupported"] == [
        {"op": "torch.aten.roll", "line": 12, "cause": "`torch.roll`"},
        {"op": "torch.aten.erfinv", "line": 14, "cause": "`aten.erfinv`"},
    ]
    lens = verdict_of(result)
    assert lens.unsupported == ("torch.aten.roll", "torch.aten.erfinv") and lens.error is None


def test_an_error_before_any_op_fails_the_whole_lowering() -> None:
    result = LowerResult(module="M", target="linalg", ok=False, diagnostics=[
        LensDiagnostic(severity="warning", message="inputs inferred",
                       kind=ErrorKind.INPUTS_MISSING),
        LensDiagnostic(severity="error", message="export failed: data-dependent branch",
                       kind=ErrorKind.EXPORT_ERROR, line=7),
    ])
    verdict = backend_verdict(result)
    assert verdict.failed and verdict.culprits == ()
    # The error that stopped it, the same for `check` and the lens (not the warning before it).
    assert verdict_json(result)["error"] == "export failed: data-dependent branch"
    assert verdict_json(result)["error_line"] == 7
    assert verdict_of(result).error == "export failed: data-dependent branch"


def test_a_failure_without_an_error_diagnostic_still_fails() -> None:
    result = LowerResult(module="M", target="linalg", ok=False, diagnostics=[
        LensDiagnostic(severity="warning", message="listing stopped", target="linalg"),
    ])
    assert backend_verdict(result).failed
    assert verdict_of(result).error == "lowering failed"


PARTIAL_TOSA = """\
module {
  func.func private @torch.aten.atan2(tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.func private @torch.aten.roll(tensor<4x16xf32>) -> tensor<4x16xf32>
  func.func @main(%arg0: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %0 = call @torch.aten.roll(%arg0) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %1 = call @torch.aten.atan2(%arg0, %0)
        : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %2 = tosa.mul %1, %arg0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    return %2 : tensor<4x16xf32>
  }
}
"""


def test_op_counts_the_backend_ir_and_its_rejected_ops() -> None:
    """What reports record for the share of ops that lower: the backend IR's ops (its stats)
    and, in a partial lowering, those kept as calls; nothing without the backend's IR."""
    ok = LowerResult(module="M", target="linalg", ok=True, ir="module {}", stats={"ops": 40})
    assert verdict_json(ok)["ops"] == {"total": 40, "rejected": 0}
    partial = LowerResult(module="M", target="tosa", ok=False, partial=True, ir=PARTIAL_TOSA,
                          stats={"ops": 5}, diagnostics=[_unsupported("torch.aten.roll", 12),
                                                         _unsupported("torch.aten.atan2", 13)])
    assert verdict_json(partial)["ops"] == {"total": 5, "rejected": 2}
    stopped = LowerResult(module="M", target="tosa", ok=False, ir="torch IR",
                          stats={"ops": 9}, diagnostics=[_unsupported("torch.aten.roll", 12)])
    assert "ops" not in verdict_json(stopped)  # the Torch IR it stopped at is no backend's
    iree = LowerResult(module="M", target="iree-cpu", ok=True, ir="", stats={"ops": 3})
    assert "ops" not in verdict_json(iree)

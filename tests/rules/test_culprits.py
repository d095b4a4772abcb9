"""The one wording of culprits (rules/culprits.py): summaries as verify, export and check
print them."""

from __future__ import annotations

from torch_mlir_lens.protocol.results import LensDiagnostic
from torch_mlir_lens.rules.culprits import cause_of, knock_on_text, summary


def _diag(file: str, line: int, op: str, cause: str | None = None,
          severity: str = "error", kind: str = "unsupported-op") -> LensDiagnostic:
    return LensDiagnostic(severity=severity, message=f"{cause or op} cannot be lowered to TOSA",
                          kind=kind, file=file, line=line, op=op, target="tosa", cause=cause)


def test_summary_names_every_cause_at_its_line_and_other_files_by_name() -> None:
    diags = [
        _diag("/w/model.py", 12, "torch.aten.erfinv", "`aten.erfinv`"),
        _diag("/w/layers.py", 7, "torch.aten.slice.Tensor",
              "`torch.roll` (decomposed to `aten.slice.Tensor`, `aten.cat`)"),
        _diag("/w/model.py", 3, "", severity="warning"),  # not a culprit
    ]
    assert summary(diags, "tosa") == (
        "cannot lower to TOSA: `aten.erfinv` (line 12), `torch.roll` (decomposed to "
        "`aten.slice.Tensor`, `aten.cat`) (layers.py:7)")


def test_summary_without_culprits_keeps_the_first_error_once() -> None:
    err = _diag("/w/model.py", 4, "", kind="lowering-error")
    err.message = "TOSA: 'func.func' op verifier failed"
    assert summary([err], "tosa") == "cannot lower to TOSA: 'func.func' op verifier failed"
    assert summary([], "linalg") == "cannot lower to Linalg"


def test_cause_falls_back_to_the_short_op_and_knock_ons_are_listed_once() -> None:
    d = _diag("/w/model.py", 9, "torch.aten.masked_select")
    assert cause_of(d) == "`aten.masked_select`"
    assert knock_on_text(d) == ""
    d.knock_on = [{"op": "torch.aten.size.int", "file": "/w/model.py", "line": 9},
                  {"op": "torch.runtime.assert", "file": "/w/model.py", "line": 9},
                  {"op": "torch.aten.size.int", "file": "/w/model.py", "line": 9}]
    assert knock_on_text(d) == "`aten.size.int`, `torch.runtime.assert` fail only because of it"
    d.knock_on = d.knock_on[:1]
    assert knock_on_text(d) == "`aten.size.int` fails only because of it"

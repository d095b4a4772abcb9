"""Verify in the editor: lens titles and diagnostics from a VerifyResult."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from torch_mlir_lens.lsp.checks.verify_view import (
    LENS_TITLE,
    lens_title,
    verify_records,
)
from torch_mlir_lens.protocol.verify_results import VerifyResult


def verdict(**fields: Any) -> VerifyResult:
    """A verdict as the worker sends it (its JSON), for module Net."""
    return VerifyResult.from_json({"module": "Net", **fields})


LINES = [
    "import torch",
    "class Net(torch.nn.Module):",
    "    def forward(self, x):",
    "        h = x * 3.0",
    "        return h.tanh()",
]
PATH = "/ws/net.py"
NAME = types.Range(start=types.Position(line=1, character=6),
                   end=types.Position(line=1, character=9))

MISMATCH = verdict(
    ok=False, kind="verify-mismatch",
    message="✗ differs: output 0, max err 0.3 at [1, 4] — first differs at line 4",
    diagnostics=[
        {"severity": "error", "message": "compiled values first differ from eager here",
         "kind": "verify-mismatch", "file": PATH, "line": 4, "op": None, "target": "llvm"},
        {"severity": "error", "message": "compiled result differs from eager: output 0",
         "kind": "verify-mismatch", "file": None, "line": None, "op": None, "target": "llvm"},
    ],
)


def test_lens_titles() -> None:
    assert lens_title(None) == LENS_TITLE
    assert lens_title(verdict(ok=True, message="✓ matches eager (max err 2e-07)")) == (
        "✓ matches eager (max err 2e-07)"
    )
    long = lens_title(verdict(ok=False, message="✗ " + "x" * 200))
    assert len(long) <= 70 and long.endswith("…")


def test_match_has_no_diagnostics() -> None:
    assert verify_records(LINES, PATH, "Net", NAME, verdict(ok=True)) == []


def test_mismatch_on_the_class_and_at_the_diverging_line() -> None:
    records = verify_records(LINES, PATH, "Net", NAME, MISMATCH)
    assert [r.range.start.line for r in records] == [1, 3]
    assert records[0].range == NAME
    assert "differs: output 0" in records[0].finding.message
    assert all(r.finding.severity == "warning" for r in records)
    assert records[1].range.start.character == 8  # the code of line 4, not its indent


def test_verify_findings_sit_beside_the_module_lowering_findings() -> None:
    from torch_mlir_lens.lsp.document import Document

    doc = Document(uri="file:///m.py", text="\n".join(LINES), version=1, path=PATH)
    records = verify_records(LINES, PATH, "Net", NAME, MISMATCH)
    stamp = doc.stamp()
    assert doc.record_diagnostics(stamp, "Net", records[:1])
    assert doc.record_verify(stamp, "Net", VerifyResult.from_json(MISMATCH.to_json()), records)
    assert len(doc.diagnostic_records()) == 3  # neither overwrote the other


def test_lowering_failure_elsewhere_is_named_on_the_class() -> None:
    result = verdict(
        ok=False, kind="lowering-error", message="✗ cannot lower to linalg: boom",
        diagnostics=[{"severity": "error", "message": "boom", "kind": "lowering-error",
                      "file": "/ws/other.py", "line": 9, "op": "torch.aten.fft_rfft"}],
    )
    records = verify_records(LINES, PATH, "Net", NAME, result)
    assert records[0].finding.severity == "error"
    # On the class, and the published message names where it is (publish.py).
    assert records[1].range == NAME
    assert (records[1].finding.file, records[1].finding.line) == ("/ws/other.py", 9)
    assert records[1].finding.op == "aten.fft_rfft"

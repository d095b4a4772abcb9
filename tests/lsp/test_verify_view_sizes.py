"""Verify in the editor for a module with dynamic dims: the verdict on the class lists each
size run (lsp/checks/verify_view.py)."""

from __future__ import annotations

from lsprotocol import types

from torch_mlir_lens.lsp.checks.verify_view import lens_title, verify_records
from torch_mlir_lens.protocol.verify_results import VerifyResult

LINES = ["import torch", "class Net(torch.nn.Module):", "    def forward(self, x):",
         "        return x"]
NAME = types.Range(start=types.Position(line=1, character=6),
                   end=types.Position(line=1, character=9))


def _size(batch: int, seq: int, ok: bool, message: str, example: bool = False) -> dict:
    return {"dims": [{"name": "batch", "size": batch}, {"name": "seq", "size": seq}],
            "example": example, "ok": ok, "message": message, "max_abs_err": 0.0,
            "outputs": []}


def test_the_class_diagnostic_lists_every_size() -> None:
    result = VerifyResult.from_json({
        "module": "Net", "ok": False, "kind": "verify-mismatch",
        "message": "✗ differs at batch=3, seq=2: output 0, max err 1",
        "sizes": [_size(2, 8, True, "✓ matches eager (max err 1e-07)", example=True),
                  _size(3, 2, False, "✗ differs: output 0, max err 1")]})
    (record,) = verify_records(LINES, "/ws/net.py", "Net", NAME, result)
    assert record.range == NAME and record.finding.severity == "warning"
    assert record.finding.message.splitlines() == [
        "Net: compiled module differs at batch=3, seq=2: output 0, max err 1",
        "✓ batch=2, seq=8 (example): matches eager (max err 1e-07)",
        "✗ batch=3, seq=2: differs: output 0, max err 1"]
    assert lens_title(result) == "✗ differs at batch=3, seq=2: output 0, max err 1"

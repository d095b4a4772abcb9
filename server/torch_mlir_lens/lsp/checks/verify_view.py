"""How a Verify result shows in the editor: the lens title and the diagnostics.

Pure functions over a `VerifyResult` (as `Engine.verify` returns it); no torch. The features
wire them in:

- code_lens.module_lenses: `lens_title(last result or None)` → "Verify", then
  "✓ matches eager (max err 2e-07)" / "✗ differs: output 0, max err 0.3 at [1, 4]";
- verify_run.verify: `doc.record_verify(stamp, module, result, verify_records(...))`, then
  publish and refresh the lenses.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from lsprotocol import types

from torch_mlir_lens.lsp.document import DiagRecord
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.lsp.wire.lens_specs import VERIFY_TITLE
from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.protocol.verify_results import VerifyResult, dims_text

LENS_TITLE = VERIFY_TITLE
MAX_TITLE = 70


def lens_title(result: VerifyResult | None) -> str:
    """The lens text: "Verify" before any run, else the verdict (clicking runs it again)."""
    if result is None:
        return LENS_TITLE
    message = result.message or ("✓ matches eager" if result.ok else "✗")
    message = message.splitlines()[0]
    if len(message) > MAX_TITLE:
        message = message[: MAX_TITLE - 1] + "…"
    return message


def size_lines(result: VerifyResult) -> str:
    """Each size of the dynamic dims that was run, one line each (empty without any)."""
    return "".join(
        f"\n{'✓' if c.ok else '✗'} {dims_text(c.dims)}"
        f"{' (example)' if c.example else ''}: {c.message.lstrip('✓✗ ')}"
        for c in result.sizes)


def _same_file(a: str, b: str | None) -> bool:
    if b is None:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normpath(a) == os.path.normpath(b)


def verify_records(
    lines: Sequence[str],
    path: str | None,
    module: str,
    name_range: types.Range,
    result: VerifyResult,
) -> list[DiagRecord]:
    """Diagnostics of one Verify result in the document at `path`.

    Nothing when it matches. Otherwise the verdict on the class name (`name_range`, with a
    line per size for a module with dynamic dims), plus each located finding of this file at
    its line (the first diverging line, lowering errors). Findings in other files are named on
    the class.
    """
    if result.ok:
        return []
    kind = result.kind or ErrorKind.VERIFY_ERROR
    mismatch = kind == ErrorKind.VERIFY_MISMATCH
    severity = types.DiagnosticSeverity.Warning if mismatch else types.DiagnosticSeverity.Error
    verdict = (result.message or "✗ verify failed").lstrip("✗ ").strip()
    message = f"{module}: compiled module {verdict}" if mismatch else \
        f"{module}: verify failed: {verdict}"
    records = [DiagRecord(
        range=name_range, severity=severity, message=message + size_lines(result),
        kind=kind, module=module, targets=("llvm",),
    )]
    for diag in result.diagnostics:
        file, line = diag.file, diag.line
        if not file or not line:
            continue  # already said by the verdict on the class
        here = _same_file(file, path)
        records.append(DiagRecord(
            range=convert.line_range(lines, line) if here else name_range,
            severity=severity if mismatch else convert.lsp_severity(diag.severity),
            message=diag.message,
            kind=diag.kind or kind,
            module=module,
            op=convert.short_op(diag.op),
            targets=(diag.target or "llvm",),
            related=() if here else (f"{file}:{line}",),
        ))
    return records

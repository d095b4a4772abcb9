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

from torch_mlir_lens.findings import make
from torch_mlir_lens.lsp.document import DiagRecord
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.lsp.wire.lens_specs import VERIFY_TITLE
from torch_mlir_lens.protocol.verify_results import VerifyResult

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
    module_line: int | None = None,
) -> list[DiagRecord]:
    """Diagnostics of one Verify result in the document at `path`.

    Nothing when it matches. Otherwise the verdict on the class name (`name_range`, with a
    line per size for a module with dynamic dims), plus each located finding of this file at
    its line (the first diverging line, lowering errors). Findings in other files are named on
    the class.
    """
    out = []
    for finding in make.of_verify(result, module=module, module_file=path or "",
                                  module_line=module_line):
        here = not finding.on_module and finding.line is not None and (
            finding.file is None or _same_file(finding.file, path))
        out.append(DiagRecord(finding, convert.line_range(lines, finding.line)
                              if here and finding.line else name_range))
    return out

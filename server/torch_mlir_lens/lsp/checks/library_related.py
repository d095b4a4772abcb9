"""A finding's related lines as LSP related information: the library lines behind it (each
with its code, read from the file) and the ops that fail only because of it.

An unsupported op made inside a wrapped library model is reported on the user's line that
reaches it (the worker places it there), with the library frames behind it (innermost first);
the finding's message already names where the op is made ("(in modeling_gpt2.py:211)",
`findings/wording.py`). Editors list related information under the diagnostic and open it
on click.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from torch_mlir_lens.findings import Related
from torch_mlir_lens.lsp.wire import convert, source_text


def information(related: Sequence[Related]) -> list[types.DiagnosticRelatedInformation]:
    """One related location per library line (its code's range, read from the file)."""
    out = []
    for r in related:
        lines = source_text.lines_of(r.file) or []
        out.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=convert.path_to_uri(r.file),
                                    range=convert.line_range(lines, r.line) if lines else
                                    _line_start(r.line)),
            message=r.message,
        ))
    return out


def notes(knock_on: Sequence[Related]) -> list[types.DiagnosticRelatedInformation]:
    """One related location per op that fails only because of this finding, at its line."""
    return [types.DiagnosticRelatedInformation(
        location=types.Location(uri=convert.path_to_uri(r.file), range=_line_start(r.line)),
        message=r.message) for r in knock_on]


def _line_start(line: int) -> types.Range:
    start = types.Position(line=line - 1, character=0)
    return types.Range(start=start, end=start)

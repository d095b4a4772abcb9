"""Conversions between the engine's plain results and LSP shapes.

Results use 1-based lines and file paths; LSP uses 0-based positions and URIs: those
translations live here (the custom answers are built in `answers.py`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls import uris

from torch_mlir_lens.lsp.wire.lens_specs import name_span
from torch_mlir_lens.system.reading import is_nameable

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def uri_to_path(uri: str) -> str | None:
    """The file-system path of a `file:` URI; None for other schemes and for a path no file
    can have (a NUL byte, a lone surrogate: `%00`, `%ED%A0%80`), which is then refused as
    "not a file URI" like any other."""
    path = uris.to_fs_path(uri) if uri.startswith("file:") else None
    return path if path is not None and is_nameable(path) else None


def path_to_uri(path: str) -> str:
    """The `file:` URI of a path."""
    return uris.from_fs_path(path) or path


def lsp_severity(severity: str | None) -> types.DiagnosticSeverity:
    """LSP severity of a result severity name (unknown → Error)."""
    return _SEVERITY.get((severity or "").lower(), types.DiagnosticSeverity.Error)


def line_range(lines: Sequence[str], line: int) -> types.Range:
    """The range of 1-based `line`'s code, from its first non-blank character to its end."""
    index = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = lines[index] if lines else ""
    start = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if end <= start:
        start, end = 0, len(text)
    return types.Range(
        start=types.Position(line=index, character=start),
        end=types.Position(line=index, character=end),
    )


def name_range(lines: Sequence[str], line: int, col: int, end_col: int, name: str) -> types.Range:
    """The range of a definition's name (`lens_specs.name_span`)."""
    index, start, end = name_span(lines, line, col, end_col, name)
    return types.Range(start=types.Position(line=index, character=start),
                       end=types.Position(line=index, character=end))


def short_op(op: str | None) -> str | None:
    """`torch.aten.roll` → `aten.roll` (the code shown to people)."""
    if not op:
        return op
    return op[len("torch."):] if op.startswith("torch.aten.") else op


def json_object(value: Any) -> dict[str, Any] | None:
    """A free-form JSON value from the client (`initializationOptions`, settings) as an object.

    lsprotocol hands LSPAny fields as parsed JSON; the settings are the user's, so anything
    but an object (a client may send null, a list, a string) means "none given".
    """
    return value if isinstance(value, dict) else None


def folder_paths(value: object) -> list[str] | None:
    """Folders as the client names them (`file:` URIs or absolute paths) → paths; None unless
    a list of them (a relative path would be resolved against the server's own folder)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    paths = [uri_to_path(v) if v.startswith("file:") else v for v in value]
    if not all(p and os.path.isabs(p) for p in paths):
        return None
    return [p for p in paths if p]

"""Conversions between the engine's plain results and LSP shapes.

Results use 1-based lines and file paths; LSP uses 0-based positions and URIs; custom
requests answer camelCase JSON. All of those translations live here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls import uris

from torch_mlir_lens.results import LensDiagnostic, LowerResult

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


def uri_to_path(uri: str) -> str | None:
    """The file-system path of a `file:` URI (None for other schemes)."""
    return uris.to_fs_path(uri) if uri.startswith("file:") else None


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
    """The range of a definition's name; re-found in the line text when columns are off.

    Discovery reports AST columns (UTF-8 byte offsets); the text search keeps the range
    right for lines holding non-ASCII characters.
    """
    index = line - 1
    text = lines[index] if 0 <= index < len(lines) else ""
    found = -1
    for match in re.finditer(rf"\b{re.escape(name)}\b", text):
        found = match.start()
        if found >= min(col, len(text)) - 1:
            break
    if found < 0:
        found, length = col, max(end_col - col, 0)
    else:
        length = len(name)
    return types.Range(
        start=types.Position(line=max(index, 0), character=found),
        end=types.Position(line=max(index, 0), character=found + length),
    )


def short_op(op: str | None) -> str | None:
    """`torch.aten.roll` → `aten.roll` (the code shown to people)."""
    if not op:
        return op
    return op[len("torch."):] if op.startswith("torch.aten.") else op


def diagnostic_json(diag: LensDiagnostic) -> dict[str, Any]:
    """A result diagnostic as camelCase JSON with a URI instead of a path."""
    return {
        "severity": diag.severity,
        "message": diag.message,
        "kind": diag.kind,
        "uri": path_to_uri(diag.file) if diag.file else None,
        "line": diag.line,
        "op": diag.op,
        "target": diag.target,
        "related": [{"uri": path_to_uri(r.file), "line": r.line, "message": r.message}
                    for r in diag.related],
        "cause": diag.cause,
        "ops": diag.ops,
        "knockOn": [
            {"op": k.get("op"), "uri": path_to_uri(k["file"]) if k.get("file") else None,
             "line": k.get("line")}
            for k in diag.knock_on
        ] if diag.knock_on else None,
    }


def lower_result_json(result: LowerResult) -> dict[str, Any]:
    """`torchMlirLens/lower`'s answer for one result (contracts.md)."""
    uri_of: dict[str, str] = {}

    def uri(path: str) -> str:
        if path not in uri_of:
            uri_of[path] = path_to_uri(path)
        return uri_of[path]

    out: dict[str, Any] = {
        "module": result.module,
        "target": result.target,
        "ok": result.ok,
        "ir": result.ir,
        "map": [
            {"irLine": m.ir_line, "uri": uri(m.file), "line": m.line, "depth": m.depth}
            for m in result.map
        ],
        "diagnostics": [diagnostic_json(d) for d in result.diagnostics],
        "stats": camel_keys(result.stats),
        "timings": dict(result.timings),
        "inputsSource": result.inputs_source,
        "partial": result.partial,
    }
    if result.frames:
        # Chains through library code, as the engine's table, with URIs for paths.
        table = result.frames.to_json()
        table["files"] = [uri(f) for f in table["files"]]
        out["frames"] = table
    if result.passes is not None:
        out["passes"] = [{"name": p.name, "ir": p.ir} for p in result.passes]
    return out


def camel(name: str) -> str:
    """snake_case → camelCase."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_keys(value: Any) -> Any:
    """A JSON value with every dict key camelCased (recursively)."""
    if isinstance(value, dict):
        return {camel(str(k)): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


def to_plain(value: Any) -> Any:
    """Request params as plain JSON: pygls hands unknown methods' params as namedtuples."""
    if hasattr(value, "_asdict"):
        return {k: to_plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value

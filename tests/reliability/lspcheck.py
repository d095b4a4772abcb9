"""Validity of what the server sends, measured against the client's copy of the document.

Positions are LSP positions: 0-based lines, characters in UTF-16 code units (the encoding the
server announced). Lines end at "\\n" only: the fuzzer never types other line breaks.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types


def utf16_len(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


def line_lengths(text: str) -> list[int]:
    """UTF-16 length of every line (a trailing newline makes one more, empty, line)."""
    return [utf16_len(line) for line in text.split("\n")]


def index_of(text: str, line: int, utf16_char: int) -> int:
    """The str index of an LSP position inside `text` (clamped to the line's end)."""
    lines = text.split("\n")
    offset = sum(len(x) + 1 for x in lines[:line])
    units = 0
    for i, ch in enumerate(lines[line]):
        if units >= utf16_char:
            return offset + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return offset + len(lines[line])


def position_of(text: str, index: int) -> types.Position:
    """The LSP position of str index `index`."""
    before = text[:index]
    line = before.count("\n")
    start = before.rfind("\n") + 1
    return types.Position(line, utf16_len(before[start:]))


def position_ok(pos: Any, lengths: list[int]) -> bool:
    line, char = _line(pos), _char(pos)
    return 0 <= line < len(lengths) and 0 <= char <= lengths[line]


def range_problem(rng: Any, text: str) -> str | None:
    """Why `rng` is not a range inside `text` (None when it is)."""
    lengths = line_lengths(text)
    start, end = _start(rng), _end(rng)
    if not position_ok(start, lengths) or not position_ok(end, lengths):
        return f"range {_fmt(rng)} outside a document of {len(lengths)} lines"
    if (_line(start), _char(start)) > (_line(end), _char(end)):
        return f"range {_fmt(rng)} ends before it starts"
    return None


def hover_problem(hover: types.Hover | None, text: str) -> str | None:
    if hover is None:
        return None
    contents = hover.contents
    if isinstance(contents, types.MarkupContent):
        if not contents.value.strip():
            return "empty hover (a line without ops must get no hover, not an empty one)"
    elif not isinstance(contents, str | list | types.MarkedStringWithLanguage):
        return f"hover contents of type {type(contents).__name__}"
    return range_problem(hover.range, text) if hover.range is not None else None


def lens_problem(lenses: list[types.CodeLens] | None, text: str) -> str | None:
    for lens in lenses or []:
        if (problem := range_problem(lens.range, text)) is not None:
            return f"code lens: {problem}"
        if lens.command is not None and not (lens.command.title and lens.command.command):
            return f"code lens with an empty title or command: {lens.command}"
    return None


def modules_problem(result: Any, text: str) -> str | None:
    if not isinstance(result, dict) or not isinstance(result.get("modules"), list):
        return f"torchMlirLens/modules result is not {{modules: [...]}}: {result!r:.200}"
    for mod in result["modules"]:
        for key in ("range", "forwardRange", "selectionRange"):
            if mod.get(key) is not None and (problem := range_problem(mod[key], text)):
                return f"module {mod.get('name')} {key}: {problem}"
    return None


def _start(rng: Any) -> Any:
    return rng["start"] if isinstance(rng, dict) else rng.start


def _end(rng: Any) -> Any:
    return rng["end"] if isinstance(rng, dict) else rng.end


def _line(pos: Any) -> int:
    return int(pos["line"] if isinstance(pos, dict) else pos.line)


def _char(pos: Any) -> int:
    return int(pos["character"] if isinstance(pos, dict) else pos.character)


def _fmt(rng: Any) -> str:
    s, e = _start(rng), _end(rng)
    return f"{_line(s)}:{_char(s)}-{_line(e)}:{_char(e)}"

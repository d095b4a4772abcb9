"""Where a cell's line sits in the .ipynb file itself: the line of its JSON text.

Review tools (GitHub code scanning, workflow annotations on a diff) place a result at a line
of the file as stored, and a notebook is stored as JSON: a cell's source is a list of strings,
one per line, each on its own line of the file (nbformat's usual layout), or one string. So
cell 3 line 10 is shown at the line of the file holding that source string. Positions come
from a small walk over the JSON text (values that do not matter, such as outputs, are skipped
by the C decoder), so any layout works; text that is not a notebook maps nothing.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Iterator

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]


class _Walk:
    """A cursor over JSON text that knows the line of every position."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(self, pos: int) -> int:
        return bisect_left(self._newlines, pos) + 1

    def peek(self) -> str:
        match = _WS.match(self.text, self.pos)
        self.pos = match.end() if match else self.pos
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise ValueError(f"expected {char!r} at {self.pos}")
        self.pos += 1

    def string(self) -> tuple[str, int]:
        """The string value at the cursor and the line it starts on."""
        if self.peek() != '"':
            raise ValueError(f"expected a string at {self.pos}")
        line = self.line_at(self.pos)
        value, self.pos = _scanstring(self.text, self.pos + 1)
        return str(value), line

    def skip(self) -> None:
        self.peek()
        _, self.pos = _DECODER.raw_decode(self.text, self.pos)

    def members(self) -> Iterator[str]:
        """The keys of the object at the cursor; at each, the cursor is at its value (which
        the caller reads or skips)."""
        yield from self._sequence("{", "}", keyed=True)

    def elements(self) -> Iterator[str]:
        """Each element of the array at the cursor (yields "", the cursor at the element)."""
        yield from self._sequence("[", "]", keyed=False)

    def _sequence(self, open_: str, close: str, *, keyed: bool) -> Iterator[str]:
        self.expect(open_)
        if self.peek() == close:
            self.pos += 1
            return
        while True:
            if keyed:
                key, _ = self.string()
                self.expect(":")
                yield key
            else:
                yield ""
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect(close)
            return


def _source_lines(walk: _Walk) -> list[int]:
    """File lines of each line of the cell source at the cursor (a string or a list)."""
    if walk.peek() == '"':
        value, line = walk.string()
        return [line] * max(1, len(value.splitlines()))
    if walk.peek() != "[":
        walk.skip()
        return []
    lines: list[int] = []
    at_start = True
    for _ in walk.elements():
        piece, line = walk.string()
        # A piece holds part of a line, a line, or several (escaped newlines): all on `line`.
        starts = piece.count("\n", 0, max(len(piece) - 1, 0)) + (1 if at_start else 0)
        lines += [line] * starts
        at_start = piece.endswith("\n")
    return lines


def cell_file_lines(text: str) -> list[list[int]]:
    """For each cell of a notebook's JSON text (in order), the 1-based file line of each of its
    source lines; [] for text that is not a notebook."""
    walk = _Walk(text)
    cells: list[list[int]] = []
    try:
        for key in walk.members():
            if key != "cells" or walk.peek() != "[":
                walk.skip()
                continue
            for _ in walk.elements():
                lines: list[int] = []
                for cell_key in walk.members():
                    if cell_key == "source":
                        lines = _source_lines(walk)
                    else:
                        walk.skip()
                cells.append(lines)
    except (ValueError, IndexError):
        return []
    return cells


def file_line(cells: list[list[int]], cell: int, line: int) -> int | None:
    """The file line of 1-based `line` of 1-based `cell` (None when it is not there)."""
    if not 1 <= cell <= len(cells):
        return None
    lines = cells[cell - 1]
    if not lines:
        return None
    return lines[min(max(line, 1), len(lines)) - 1]

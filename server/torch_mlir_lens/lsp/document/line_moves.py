"""How published diagnostics follow an edit: old line → new line, or gone.

From the edit ranges when the client sent incremental changes (cheap and exact), else from a
diff of the two texts. A line only maps when its text is unchanged at its new position, so a
diagnostic never lands on a line it was not made for.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from lsprotocol import types

from torch_mlir_lens.lsp.document.records import DiagRecord

_DIFF_LIMIT = 5000  # lines: beyond this the changed middle of a text is not diffed


def map_lines(
    old: Sequence[str], new: Sequence[str], changes: Sequence[Any] | None = None
) -> Callable[[int], int | None]:
    """Old 0-based line → its new line, or None when the edit touched it.

    From the edit ranges when the client sent incremental changes (cheap and exact), else
    from the common head and tail of the two texts plus a diff of the (small) middle. Either
    way a line only maps when its text is unchanged at the new position.
    """
    move: Callable[[int], int | None]
    ranged = bool(changes) and all(getattr(c, "range", None) is not None for c in changes or [])
    if ranged:
        def move(line: int) -> int | None:
            for change in changes or []:
                start, end = change.range.start.line, change.range.end.line
                delta = change.text.count("\n") - (end - start)
                if line > end or (line == end and line > start):
                    line += delta
                elif line == start and change.range.start.character == 0 and (
                    change.text.endswith("\n") or not change.text
                ) and end == start and change.range.end.character == 0:
                    line += delta  # whole lines inserted above this one
            return line
    else:
        move = _diff_mover(old, new)

    def mapped(line: int) -> int | None:
        target = move(line)
        if target is None or not 0 <= line < len(old) or not 0 <= target < len(new):
            return None
        return target if old[line] == new[target] else None

    return mapped


def _diff_mover(old: Sequence[str], new: Sequence[str]) -> Callable[[int], int | None]:
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    old_mid = list(old[head:len(old) - tail])
    new_mid = list(new[head:len(new) - tail])
    middle: dict[int, int] = {}
    if len(old_mid) <= _DIFF_LIMIT and len(new_mid) <= _DIFF_LIMIT:
        matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
        for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    middle[head + i1 + k] = head + j1 + k

    def move(line: int) -> int | None:
        if line < head:
            return line
        if line >= len(old) - tail:
            return line + len(new) - len(old)
        return middle.get(line)

    return move


def shift_record(
    record: DiagRecord, line_map: Callable[[int], int | None]
) -> DiagRecord | None:
    """The record moved with its lines, or None when one of its lines was edited."""
    start, end = record.range.start.line, record.range.end.line
    new_start = line_map(start)
    new_end = new_start if end == start else line_map(end)
    if new_start is None or new_end is None or new_end - new_start != end - start:
        return None
    moved = types.Range(
        start=types.Position(line=new_start, character=record.range.start.character),
        end=types.Position(line=new_end, character=record.range.end.character),
    )
    return replace(record, range=moved)



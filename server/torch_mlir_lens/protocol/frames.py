"""Whole call chains of the ops that pass through library code, and the questions asked of them.

The source map (`LowerResult.map`) keeps the user's frames of each IR line. When an op was made
inside library code (a `transformers` model the user's module wraps), the user frames all point
at the one line that called the library; the frames inside the library are kept here.

A `FrameTable` holds, for each IR line whose op's call chain has at least one library frame,
that whole chain: user and library frames, innermost first (frames inside torch itself and the
standard library are dropped by the worker; see `worker/ir/library_frames.py`). Chains repeat a
lot (every layer of a model runs the same lines), so each distinct chain is stored once and IR
lines refer to it by index. IR lines whose chain is user code only are not listed: their map
entries are the whole chain.

Pure data, no torch: the worker fills it, the engine ships it, the language server, the CLI and
the client read it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SourceFrame:
    """One frame of a call chain: 1-based `line` of `file`; `library` when not the user's."""

    file: str
    line: int
    library: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "library": self.library}


class FrameTable:
    """IR line → the call chains (innermost frame first) of its op, library frames included."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.library: list[bool] = []  # per file: a library file (else the user's)
        self.chains: list[tuple[tuple[int, int], ...]] = []  # ((file index, line), ...)
        self.rows: list[tuple[int, int]] = []  # (ir_line, chain index), no duplicates
        self._file_ids: dict[str, int] = {}
        self._chain_ids: dict[tuple[tuple[int, int], ...], int] = {}
        self._row_set: set[tuple[int, int]] = set()
        self._by_line: dict[int, list[int]] | None = None

    def __bool__(self) -> bool:
        return bool(self.rows)

    def _file_id(self, file: str, library: bool) -> int:
        fid = self._file_ids.get(file)
        if fid is None:
            fid = self._file_ids[file] = len(self.files)
            self.files.append(file)
            self.library.append(library)
        return fid

    def add(self, ir_line: int, chain: Sequence[SourceFrame]) -> None:
        """Record that the op on `ir_line` came through `chain` (innermost frame first)."""
        key = tuple((self._file_id(f.file, f.library), f.line) for f in chain)
        cid = self._chain_ids.get(key)
        if cid is None:
            cid = self._chain_ids[key] = len(self.chains)
            self.chains.append(key)
        row = (ir_line, cid)
        if row not in self._row_set:
            self._row_set.add(row)
            self.rows.append(row)
            self._by_line = None

    def sort(self) -> None:
        """Order the rows by IR line (the worker adds them in op order)."""
        self.rows.sort()
        self._by_line = None

    def chain(self, index: int) -> list[SourceFrame]:
        """Chain `index` as frames, innermost first."""
        return [SourceFrame(self.files[f], line, self.library[f]) for f, line in self.chains[index]]

    def chains_of(self, ir_line: int) -> list[list[SourceFrame]]:
        """The chains of the op(s) on `ir_line` (empty when its chain is user code only)."""
        if self._by_line is None:
            by_line: dict[int, list[int]] = {}
            for line, cid in self.rows:
                by_line.setdefault(line, []).append(cid)
            self._by_line = by_line
        return [self.chain(c) for c in self._by_line.get(ir_line, [])]

    def ir_lines(self) -> list[int]:
        """IR lines that have a library chain, ascending."""
        return sorted({line for line, _ in self.rows})

    def to_json(self) -> dict[str, Any]:
        """`{"files", "library": [file index...], "chains": [[file, line, file, line...]],
        "rows": [[ir_line, chain]]}`: each chain's frames flattened in pairs, innermost first."""
        return {
            "files": list(self.files),
            "library": [i for i, lib in enumerate(self.library) if lib],
            "chains": [[x for pair in chain for x in pair] for chain in self.chains],
            "rows": [list(r) for r in self.rows],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> FrameTable:
        table = cls()
        if not data:
            return table
        files = list(data.get("files") or [])
        library = set(data.get("library") or [])
        for i, file in enumerate(files):
            table._file_id(file, i in library)
        for flat in data.get("chains") or []:
            key = tuple((int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat) - 1, 2))
            table._chain_ids.setdefault(key, len(table.chains))
            table.chains.append(key)
        for ir_line, cid in data.get("rows") or []:
            row = (int(ir_line), int(cid))
            if row not in table._row_set and 0 <= row[1] < len(table.chains):
                table._row_set.add(row)
                table.rows.append(row)
        return table


def _same(a: str, b: str) -> bool:
    return os.path.normcase(os.path.normpath(a)) == os.path.normcase(os.path.normpath(b))


def library_part(chain: Sequence[SourceFrame], file: str, line: int) -> list[SourceFrame] | None:
    """The library frames that user line `file:line` reached in `chain`, innermost first.

    Those are the frames between that user frame and the next user frame further in (a user
    callback the library calls back into ends the part). None when the line is not in the
    chain; an empty list when it calls user code directly.
    """
    for i, frame in enumerate(chain):
        if not frame.library and frame.line == line and _same(frame.file, file):
            part: list[SourceFrame] = []
            for inner in reversed(chain[:i]):
                if not inner.library:
                    break
                part.append(inner)
            part.reverse()
            return part
    return None


def entry_frame(part: Sequence[SourceFrame]) -> SourceFrame:
    """The line to name for a library part (non-empty, innermost first): the innermost frame in
    the file the user's line called into, e.g. `modeling_gpt2.py`'s attention line rather
    than the shared `Conv1D` helper in `pytorch_utils.py` that it calls."""
    entry_file = part[-1].file
    return next(f for f in part if f.file == entry_file)


@dataclass
class LibraryLine:
    """One library line reached from a user line, and the IR lines of the ops it produced."""

    frame: SourceFrame
    ir_lines: list[int]


def library_breakdown(table: FrameTable, file: str, line: int,
                      ir_lines: Iterable[int] | None = None) -> list[LibraryLine]:
    """The library lines user line `file:line` reached, heaviest first (by IR lines).

    Each op counts once, at the `entry_frame` of its chain's library part. `ir_lines` limits
    the count (e.g. to the lines that start an op).
    """
    wanted = None if ir_lines is None else set(ir_lines)
    hits: dict[SourceFrame, set[int]] = {}
    entry_of: dict[int, SourceFrame | None] = {}  # chains repeat: resolve each once
    for ir_line, cid in table.rows:
        if wanted is not None and ir_line not in wanted:
            continue
        if cid not in entry_of:
            part = library_part(table.chain(cid), file, line)
            entry_of[cid] = entry_frame(part) if part else None
        frame = entry_of[cid]
        if frame is not None:
            hits.setdefault(frame, set()).add(ir_line)
    out = [LibraryLine(frame, sorted(lines)) for frame, lines in hits.items()]
    out.sort(key=lambda x: (-len(x.ir_lines), x.frame.file, x.frame.line))
    return out


def in_installed_package(path: str | None) -> bool:
    """Whether a file is part of an installed package (site-packages or dist-packages): library
    code opened for reading, e.g. from an IR pane, which the language server does not lower."""
    norm = (path or "").replace("\\", "/")
    return "/site-packages/" in norm or "/dist-packages/" in norm


def short_path(file: str) -> str:
    """A library file as people name it: the part after `site-packages/` (or the file name)."""
    norm = file.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in norm:
            return norm.rsplit(marker, 1)[1]
    return os.path.basename(norm)

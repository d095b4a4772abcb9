"""The text of files the language server does not have open (library sources), read and cached.

Hovers name library lines with their code (`modeling_llama.py:254  attn_output = ...`). The
server reads those files itself (a plain file read, never an import), keyed by path, size and
modification time, so an upgraded package is read again.
"""

from __future__ import annotations

import os

from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.system.reading import read_text

MAX_FILES = 64
MAX_BYTES = 4 * 1024 * 1024  # a bigger "source" is not worth showing lines of

_cache: BoundedCache[tuple[str, int, int], list[str] | None] = BoundedCache(MAX_FILES)


def lines_of(path: str) -> list[str] | None:
    """The lines of `path` (None when it cannot be read as UTF-8 text)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_size, st.st_mtime_ns)
    if key in _cache:
        return _cache.get(key)
    lines: list[str] | None = None
    try:
        lines = read_text(path, MAX_BYTES).splitlines()  # a FIFO or device is not read
    except (OSError, UnicodeDecodeError):
        lines = None
    _cache.put(key, lines)
    return lines


def line_text(path: str, line: int) -> str:
    """1-based `line` of `path`, stripped ("" when unknown)."""
    lines = lines_of(path)
    if lines is None or not 1 <= line <= len(lines):
        return ""
    return lines[line - 1].strip()

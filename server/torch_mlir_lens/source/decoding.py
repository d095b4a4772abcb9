"""Python source files read as Python reads them: a PEP 263 coding line, a UTF-8 BOM.

A file Python runs must not be refused here: `# -*- coding: latin-1 -*-` (or any codec
Python knows) decides how its bytes are decoded, UTF-8 otherwise, and a UTF-8 byte-order
mark is dropped. The text keeps its coding line; Python ignores it when compiling a string,
and its lines are the file's lines.
"""

from __future__ import annotations

import io
import tokenize

from torch_mlir_lens.system.reading import read_bytes


class SourceError(Exception):
    """A file whose bytes are not text in its encoding (`line`: where, when known)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def decode_source(data: bytes) -> str:
    """The text of a Python file's bytes, decoded as Python does; SourceError otherwise."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # an unknown codec, or a BOM contradicting the coding line
        raise SourceError(exc.msg, exc.lineno) from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SourceError(f"not valid {encoding} text (byte {data[exc.start]:#04x}): declare "
                          "its encoding with a '# -*- coding: NAME -*-' line (PEP 263)",
                          line) from None
    return text.removeprefix("\ufeff")


def read_source(path: str) -> str:
    """The text of the Python file at `path` (OSError, SourceError); bounded and regular
    files only (`reading.py`)."""
    return decode_source(read_bytes(path))

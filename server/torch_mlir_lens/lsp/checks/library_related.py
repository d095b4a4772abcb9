"""Diagnostics for problems inside library code: the library lines, named and linked.

An unsupported op made inside a wrapped library model is reported on the user's line that
reaches it (the worker places it there); the worker also sends the library frames behind it
(`LensDiagnostic.related`, innermost first). Here they become the message's
"(in modeling_gpt2.py:211)" and the diagnostic's `relatedInformation`, one entry per library
line, which editors list under the diagnostic and open on click.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Protocol

from lsprotocol import types

from torch_mlir_lens.lsp.wire import convert, source_text

MAX_NAMED = 3  # library lines named in the message; relatedInformation lists them all


class _HasLibrary(Protocol):
    @property
    def library(self) -> tuple[tuple[str, int, str], ...]: ...


def collect(records: Iterable[_HasLibrary]) -> list[tuple[str, int, str]]:
    """The library frames of merged records, first seen first, without repeats."""
    out: list[tuple[str, int, str]] = []
    seen: set[tuple[str, int]] = set()
    for rec in records:
        for file, line, message in rec.library:
            if (file, line) not in seen:
                seen.add((file, line))
                out.append((file, line, message))
    return out


def name_in_message(message: str, library: Sequence[tuple[str, int, str]]) -> str:
    """The message naming the library lines where the op is made (if not named already)."""
    # The op is made at the first frame of each chain: frames saying "comes from here".
    origins = [(f, n) for f, n, m in library if "comes from" in m] or [
        (f, n) for f, n, _m in library[:1]]
    names = [f"{os.path.basename(f)}:{n}" for f, n in origins]
    missing = [n for n in names if n not in message]
    if not missing:
        return message
    shown = ", ".join(missing[:MAX_NAMED])
    if len(missing) > MAX_NAMED:
        shown += f" and {len(missing) - MAX_NAMED} more"
    return f"{message} (in {shown})"


def information(library: Sequence[tuple[str, int, str]]
                ) -> list[types.DiagnosticRelatedInformation]:
    """One related location per library line (its code, read from the file)."""
    out = []
    for file, line, message in library:
        lines = source_text.lines_of(file) or []
        out.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=convert.path_to_uri(file),
                                    range=convert.line_range(lines, line) if lines else
                                    types.Range(start=types.Position(line=line - 1, character=0),
                                                end=types.Position(line=line - 1, character=0))),
            message=message,
        ))
    return out

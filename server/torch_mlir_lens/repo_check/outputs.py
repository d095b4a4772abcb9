"""The files a run writes (the report of `-o`, the baseline): checked before the run, written
atomically after it.

A report or baseline is written to a temporary file beside it and renamed over it, so a
reader never sees half of one and a failed write leaves the old file as it was. Whether that
can work is tried before any module is lowered (a folder given as `-o`, a folder that does
not exist, a read-only one), so a long run never ends in a lost report.
"""

from __future__ import annotations

import contextlib
import os

from torch_mlir_lens.project.write_policy import SOURCE_SUFFIXES
from torch_mlir_lens.system.atomic_write import write_atomically


def unwritable(path: str) -> str | None:
    """Why `path` cannot be written atomically, or None when it can (tried, not guessed:
    a temporary file is created beside it and removed)."""
    if os.path.isdir(path):
        return "is a folder (give a file name)"
    if path.lower().endswith(SOURCE_SUFFIXES):
        return "is a source file name: a report never replaces source code"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"no such folder: {folder}"
    probe = _temp_name(path)
    try:
        with open(probe, "x", encoding="utf-8"):
            pass
    except OSError as exc:
        return f"cannot write in {folder}: {exc.strerror or exc}"
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def write_text_atomically(path: str, text: str) -> None:
    """Write `text` to `path` whole or not at all (`system/atomic_write.py`); OSError on
    failure, any old file untouched."""
    write_atomically(path, text.encode("utf-8"))


def _temp_name(path: str) -> str:
    return f"{path}.{os.getpid()}.tmp"

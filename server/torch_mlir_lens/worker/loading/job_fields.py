"""Reading a job's file from disk, with the error a user can act on."""

from __future__ import annotations

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.system.reading import read_text as read_text_bounded


def read_text(path: str) -> str:
    """A user's file from disk; LensError("load-error") when it cannot be read."""
    try:
        return read_text_bounded(path)  # regular files only, bounded
    except (OSError, UnicodeDecodeError) as exc:
        raise LensError(ErrorKind.LOAD_ERROR, f"cannot read {path}: {exc}", file=path) from exc

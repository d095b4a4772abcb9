"""Reading a job's file from disk, with the error a user can act on."""

from __future__ import annotations

from pathlib import Path

from torch_mlir_lens.protocol.results import ErrorKind, LensError


def read_text(path: str) -> str:
    """A user's file from disk; LensError("load-error") when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LensError(ErrorKind.LOAD_ERROR, f"cannot read {path}: {exc}", file=path) from exc

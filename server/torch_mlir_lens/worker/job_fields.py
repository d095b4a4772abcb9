"""The fields every module job carries (docs/contracts.md), read and checked once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from torch_mlir_lens.results import ErrorKind, LensError


def job_path(job: dict[str, Any]) -> str:
    """The absolute path of the user's file; LensError("bad-request") when missing."""
    path = job.get("path")
    if not isinstance(path, str) or not path:
        raise LensError(ErrorKind.BAD_REQUEST, "the job has no 'path'")
    return os.path.abspath(path)


def job_text(job: dict[str, Any]) -> str:
    """The file's text: the job's (unsaved buffer) or the file on disk."""
    text = job.get("text")
    if isinstance(text, str):
        return text
    return read_text(job_path(job))


def read_text(path: str) -> str:
    """A user's file from disk; LensError("load-error") when it cannot be read."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LensError(ErrorKind.LOAD_ERROR, f"cannot read {path}: {exc}", file=path) from exc


def job_module(job: dict[str, Any]) -> str:
    """The module (class or function) name; LensError("bad-request") when missing."""
    module = job.get("module")
    if not isinstance(module, str) or not module:
        raise LensError(ErrorKind.BAD_REQUEST, "the job has no 'module'")
    return module

"""Where `check` and `merge` send their reports (stdout or a file, which `repo_check` writes
atomically), the reports `merge` reads, and the check gate's input errors as the command
line's one-line errors."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from torch_mlir_lens.cli.common import CliError
from torch_mlir_lens.system.reading import REPORT, read_text


def emit(text: str, output: str | None) -> None:
    """The report to stdout, or atomically to `output`."""
    if output is None:
        sys.stdout.write(text)
        return
    from torch_mlir_lens.repo_check import write_report

    write_report(output, text)


@contextlib.contextmanager
def as_cli_error() -> Iterator[None]:
    """A `repo_check.CheckInputError` raised inside becomes the command's `FILE: message`
    error (exit 2)."""
    from torch_mlir_lens.repo_check import CheckInputError

    try:
        yield
    except CheckInputError as err:
        raise CliError(err.message, file=err.file) from err


def read_json(path: str) -> Any:
    """A report given on the command line, parsed."""
    try:
        return json.loads(read_text(path, REPORT))  # bounded, regular files only
    except FileNotFoundError as exc:
        raise CliError("no such file", file=path) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"not a JSON report: {exc}", file=path) from exc

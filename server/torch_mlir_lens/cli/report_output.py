"""Where `check` and `merge` write their reports: stdout or a file, checked writable first."""

from __future__ import annotations

import json
import sys
from typing import Any

from torch_mlir_lens.cli.common import CliError
from torch_mlir_lens.repo_check.outputs import unwritable, write_text_atomically


def emit(text: str, output: str | None) -> None:
    """The report to stdout, or atomically to `output`."""
    if output is None:
        sys.stdout.write(text)
        return
    try:
        write_text_atomically(output, text)
    except OSError as exc:
        raise CliError(f"cannot write the report: {exc.strerror or exc}", file=output) from exc


def check_writable(path: str | None, what: str) -> None:
    """Refuse an output that cannot be written before the run, not after it."""
    problem = unwritable(path) if path is not None else None
    if problem is not None:
        raise CliError(f"cannot write the {what} there: {problem}", file=path)


def read_json(path: str) -> Any:
    """A report given on the command line, parsed."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError as exc:
        raise CliError("no such file", file=path) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"not a JSON report: {exc}", file=path) from exc

"""The command line's side of Jupyter notebooks: reading one, and writing its locations.

Each notebook read in this run is remembered by absolute path, so every message naming it
(`cli.common.where`, diagnostics, errors from the worker) writes `NOTEBOOK.ipynb:CELL:LINE`.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from torch_mlir_lens.source import notebook_program

_programs: dict[str, notebook_program.Program] = {}


def read(path: str) -> notebook_program.Program:
    """The program of the notebook at absolute `path`, remembered for locations; a warning per
    cell left out. Raises OSError, UnicodeDecodeError or notebook_program.NotebookError."""
    program = notebook_program.read_program(path)
    _programs[path] = program
    shown = os.path.relpath(path)
    shown = path if shown.startswith("..") else shown
    for problem in program.problems:
        sys.stderr.write(f"{shown}:{problem.index + 1}:{problem.line}: warning: "
                         f"{problem.message}: this cell does not parse and is left out\n")
    return program


def program_of(file: str | None) -> notebook_program.Program | None:
    """The program of a notebook read in this run."""
    return _programs.get(os.path.abspath(file)) if file else None


def line_text(program: notebook_program.Program | None, line: int | None) -> str:
    """`line N`; `cell C line L` in a notebook."""
    where = program.to_cell(line) if program is not None and line else None
    return f"cell {where[0].number} line {where[1]}" if where else f"line {line}"


def relabel(message: str, file: str | None) -> str:
    """A message with `NOTEBOOK.ipynb:N` as `NOTEBOOK.ipynb:CELL:LINE` (when it names one)."""
    program = program_of(file)
    if program is None or not file:
        return message
    return notebook_program.relabel(message, file, program)


def to_json(program: notebook_program.Program | None, path: str, value: Any) -> str:
    """A result as JSON; a notebook's lines as cell lines with their `cell` numbers."""
    if program is not None:
        value = notebook_program.relocate_json(value, path, program)
    return json.dumps(value, indent=1)

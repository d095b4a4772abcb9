"""Jupyter notebooks in the repository check, as first-class files.

A notebook is planned like a Python file whose text is its code cells' program
(`torch_mlir_lens.source.notebook_program`): the editor's discovery finds its modules, and
each module is lowered from the cells up to its own, so a later training cell never runs.
Workers speak of program lines; reports speak of cells: every notebook line of a report entry
or finding is rewritten as its line within the cell, with the cell number beside it (`cell`
beside `line`, `error_cell` beside `error_line`, `module_cell` beside `module_line`), and
`NOTEBOOK.ipynb:N` in messages as `NOTEBOOK.ipynb:CELL:LINE`: the shape of `check
NOTEBOOK.ipynb --json`.

Review tools place results at lines of the file as stored: `FileLines` maps (cell, line) to
the line of the .ipynb's JSON text holding it (`ipynb_lines`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens.findings import Finding
from torch_mlir_lens.repo_check.ipynb_lines import cell_file_lines, file_line
from torch_mlir_lens.source import notebook_program
from torch_mlir_lens.system.reading import NOTEBOOK, read_text


@dataclass
class NotebookSource:
    """A notebook of the plan: its program and the modules discovery found in it."""

    program: notebook_program.Program
    modules: list[Any]  # discovery.ModuleInfo

    def module_text(self, name: str) -> str:
        """The text module `name` is lowered from: the cells up to its own."""
        return notebook_program.module_text(self.program, self.modules, name)


def relocate_entry(entry: dict[str, Any], rel: str,
                   program: notebook_program.Program) -> dict[str, Any]:
    """A report entry of a module of the notebook `rel` with cell lines (see the docstring)."""
    relocated = notebook_program.relocate_json(entry, rel, program)
    assert isinstance(relocated, dict)
    return relocated


def relocate_finding(f: Finding, rel: str, program: notebook_program.Program) -> None:
    """Give a finding's lines in the notebook `rel` as cell lines, in place."""
    if f.file == rel and f.line:
        where = program.to_cell(f.line)
        if where is not None:
            f.cell, f.line = where[0].number, where[1]
    if f.module_file == rel and f.module_line:
        where = program.to_cell(f.module_line)
        if where is not None:
            f.module_cell, f.module_line = where[0].number, where[1]
    if notebook_program.SUFFIX in f.message:
        f.message = notebook_program.relabel(f.message, rel, program)


def where(file: str, line: int | None, cell: int | None = None) -> str:
    """`FILE:LINE`, or `NOTEBOOK.ipynb:CELL:LINE` for a notebook's line (`FILE` alone without
    a line)."""
    if not line:
        return file
    return f"{file}:{cell}:{line}" if cell else f"{file}:{line}"


class FileLines:
    """(notebook, cell, line) → the line of the notebook's file, read once per notebook from
    the project root (None when the file is gone, e.g. merging reports elsewhere)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._cells: dict[str, list[list[int]]] = {}

    def line(self, file: str, cell: int | None, line: int | None) -> int | None:
        """The file line to show `line` of `cell` at; `line` itself for other files."""
        if cell is None or not line:
            return line
        if file not in self._cells:
            try:
                self._cells[file] = cell_file_lines(
                    read_text(os.path.join(self.root, file), NOTEBOOK))
            except (OSError, UnicodeDecodeError):
                self._cells[file] = []
        return file_line(self._cells[file], cell, line)

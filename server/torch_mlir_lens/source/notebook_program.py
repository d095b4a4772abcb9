"""Jupyter notebooks as one program: the code cells in order, line for line.

Everything else (discovery, fingerprints, the worker's definitions-only loader, the source map)
works on Python text. A notebook becomes such a text by putting its Python code cells one after
the other, each starting on a new line, with IPython syntax replaced line for line so every
program line still is one line of one cell:

- `%magic …`, `!shell …`, `x = !shell …`, `obj?`, `?obj`: the line becomes empty (or `pass` at
  its indentation inside a block, so the block stays valid);
- a cell magic (`%%bash`, `%%writefile`, …): the whole cell is empty, except `%%time` and
  `%%capture`, whose bodies are Python (only the magic line goes);
- a cell that still does not parse (a typo) is left out as a whole and reported as a
  `CellProblem`; top-level statements using `await` (IPython runs them) are left out alone:
  they are calls or loops, which never run here anyway.

Markdown and raw cells contribute no lines. `Program` maps program lines to (cell, line) and
back; `text_for` is the text a module is lowered from: the cells up to and including the
module's cell (or the cell of the last module using it, whose forward pass may give it its
inputs), plus only `def example_inputs` of later cells (so a later training cell never runs,
not even its definitions, while the inputs convention still works from any cell).

Cells are numbered from 1 in the notebook's order, markdown cells included (the number a
reader counts in the file); `NOTEBOOK.ipynb:CELL:LINE` is how locations are written.
This module does not import torch.
"""

from __future__ import annotations

import ast
import json
import os
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from torch_mlir_lens.system.reading import NOTEBOOK, read_bytes

SUFFIX = ".ipynb"
_PY_CELL_MAGICS = {"time", "capture"}  # cell magics whose body is Python
_HELP = re.compile(r"^(\?{1,2}\s*[\w.]+|[\w.\[\]()'\"]+\?{1,2})$")
_SHELL_ASSIGN = re.compile(r"^[\w.,\s\[\]()*]+=\s*[!%]")


class NotebookError(ValueError):
    """A notebook file that cannot be read as one (bad JSON, not nbformat 4, not Python)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def is_notebook(path: str | None) -> bool:
    """Whether a path (or URI) names a Jupyter notebook."""
    return bool(path) and str(path).lower().endswith(SUFFIX)


@dataclass(frozen=True)
class Cell:
    """One cell as the notebook holds it."""

    source: str
    kind: str = "code"  # "code", "markdown" or "raw"
    language: str = "python"
    uri: str | None = None  # the editor's cell document, when it comes from an editor


@dataclass(frozen=True)
class CellSpan:
    """Where one Python code cell sits in the program."""

    index: int  # 0-based position among all the notebook's cells
    start: int  # 0-based program line of the cell's first line
    count: int  # the cell's lines
    uri: str | None = None
    # 0-based program lines of the cell's top-level `def example_inputs` (decorators included)
    inputs_lines: tuple[int, ...] = ()

    @property
    def number(self) -> int:
        """The 1-based cell number people read."""
        return self.index + 1


@dataclass(frozen=True)
class CellProblem:
    """A cell left out of the program because it does not parse."""

    index: int
    line: int  # 1-based line in the cell
    message: str
    uri: str | None = None


@dataclass
class Program:
    """The notebook's Python code cells as one text, and the line maps both ways."""

    text: str
    spans: list[CellSpan]
    problems: list[CellProblem] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._starts = [s.start for s in self.spans]

    def span_at(self, line: int) -> CellSpan | None:
        """The cell holding 1-based program `line`."""
        k = bisect_right(self._starts, line - 1) - 1
        if k < 0:
            return None
        span = self.spans[k]
        return span if line - 1 < span.start + span.count else None

    def to_cell(self, line: int) -> tuple[CellSpan, int] | None:
        """1-based program line → (its cell, 1-based line in the cell)."""
        span = self.span_at(line)
        return None if span is None else (span, line - span.start)

    def span_of(self, uri: str) -> CellSpan | None:
        """The span of the cell document `uri`."""
        return next((s for s in self.spans if s.uri == uri), None)

    def span_of_index(self, index: int) -> CellSpan | None:
        return next((s for s in self.spans if s.index == index), None)

    def to_program(self, span: CellSpan, cell_line: int) -> int:
        """1-based line in a cell → 1-based program line (clamped into the cell)."""
        return span.start + min(max(cell_line, 1), max(span.count, 1))

    def label(self, line: int | None) -> str:
        """`CELL:LINE` of a program line (`?` when it is outside every cell)."""
        where = self.to_cell(line) if line else None
        return f"{where[0].number}:{where[1]}" if where else "?"

    def text_for(self, line: int) -> str:
        """The text to lower a module defined at program `line` from (see the docstring)."""
        span = self.span_at(line)
        if span is None:
            return self.text
        end = span.start + span.count
        lines = self.text.split("\n")
        keep = {n for s in self.spans if s.start >= end for n in s.inputs_lines}
        for n in range(end, len(lines)):
            if n not in keep:
                lines[n] = ""
        return "\n".join(lines)


def module_text(program: Program, modules: Sequence[object], name: str) -> str:
    """The text to lower module `name` from: `text_for` the module's cell, or the cell of the
    last module using it (its inputs may be derived from that parent's forward pass).

    `modules`: discovery's ModuleInfo list of the program (name, line, parent_candidates).
    """
    by_name = {getattr(m, "name", None): m for m in modules}
    last, todo, seen = 0, [name], set()
    while todo:
        current = todo.pop()
        info = by_name.get(current)
        if current in seen or info is None:
            continue
        seen.add(current)
        last = max(last, int(getattr(info, "line", 0)))
        todo.extend(getattr(info, "parent_candidates", None) or [])
    # Not a module of the notebook: nothing of it runs (the worker says it is unknown).
    return program.text_for(last) if last else "\n" * program.text.count("\n")


# ---------------------------------------------------------------------------------------------
# Reading .ipynb files


def read_cells(text: str) -> list[Cell]:
    """The cells of an .ipynb file's text (nbformat 4). Raises NotebookError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a notebook: invalid JSON ({exc.msg})", exc.lineno) from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError("nbformat 3 notebooks are not supported: save it as nbformat 4")
        raise NotebookError("not a notebook: no 'cells' list")
    language = _language(data.get("metadata"))
    if language and language != "python":
        raise NotebookError(f"not a Python notebook (its language is {language!r})")
    cells = []
    for number, raw in enumerate(data["cells"], 1):
        if not isinstance(raw, dict):
            raise NotebookError(f"not a notebook: cell {number} is not an object")
        source = raw.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):  # nbformat: a string or a list of strings
            raise NotebookError(f"not a notebook: the source of cell {number} is "
                                f"{json.dumps(source)[:40]}, not text (a string or a list of "
                                "strings)")
        cells.append(Cell(source=source, kind=str(raw.get("cell_type", "code"))))
    return cells


def _language(metadata: object) -> str | None:
    if not isinstance(metadata, dict):
        return None
    for key, sub in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(sub), str):
            return str(value[sub]).lower()
    return None


def read_program(path: str) -> Program:
    """The program of the notebook file at `path`. Raises OSError, UnicodeDecodeError or
    NotebookError."""
    return synthesize(read_cells(read_bytes(path, NOTEBOOK).decode("utf-8-sig")))


# ---------------------------------------------------------------------------------------------
# Cells → program


def synthesize(cells: Iterable[Cell]) -> Program:
    """One program text of the Python code cells, in order, IPython syntax blanked."""
    out: list[str] = []
    spans: list[CellSpan] = []
    problems: list[CellProblem] = []
    for index, cell in enumerate(cells):
        if cell.kind != "code" or cell.language != "python":
            continue
        lines = cell.source.splitlines()
        python, problem = _python_lines(lines)
        start = len(out)
        inputs_lines: tuple[int, ...] = ()
        if problem is not None:
            problems.append(CellProblem(index, problem[0], problem[1], cell.uri))
        else:
            inputs_lines = tuple(start + n for n in _inputs_def_lines(python))
        out.extend(python)
        spans.append(CellSpan(index, start, len(lines), cell.uri, inputs_lines))
    return Program("\n".join(out) + ("\n" if out else ""), spans, problems)


def _python_lines(lines: Sequence[str]) -> tuple[list[str], tuple[int, str] | None]:
    """A cell's lines as Python (IPython syntax blanked), and (line, message) if it does not
    parse (then every line is blank)."""
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name not in _PY_CELL_MAGICS:
            return [""] * len(lines), None  # the body is not Python (bash, writefile, html, …)
        at = next(i for i, ln in enumerate(lines) if ln.strip())
        lines = [*lines[:at], "", *lines[at + 1:]]
    python = _blank_ipython(lines)
    try:
        tree = compile("\n".join(python), "<cell>", "exec",
                       flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        return [""] * len(lines), (exc.lineno or 1, exc.msg)
    except ValueError as exc:  # null bytes
        return [""] * len(lines), (1, str(exc))
    return _without_top_level_await(python, tree), None


def _blank_ipython(lines: Sequence[str]) -> list[str]:
    """Lines with IPython-only statements replaced (line count kept)."""
    out = list(lines)
    depth = 0
    quote: str | None = None
    continued = False
    for i, line in enumerate(lines):
        at_start = quote is None and depth == 0 and not continued
        stripped = line.strip()
        if at_start and stripped and _is_ipython(stripped):
            indent = line[: len(line) - len(line.lstrip())]
            out[i] = f"{indent}pass" if indent else ""
            continue
        depth, quote, continued = _scan(line, depth, quote)
    return out


def _is_ipython(stripped: str) -> bool:
    if stripped[0] in "%!":
        return True
    return bool(_HELP.match(stripped) or _SHELL_ASSIGN.match(stripped))


def _scan(line: str, depth: int, quote: str | None) -> tuple[int, str | None, bool]:
    """Bracket depth, open triple quote and backslash continuation after `line`."""
    i, n = 0, len(line)
    while i < n:
        if quote is not None:
            end = line.find(quote, i)
            while end > 0 and line[end - 1] == "\\" and quote[0] != "r":
                end = line.find(quote, end + 1)
            if end < 0:
                return depth, quote, False
            i, quote = end + 3, None
            continue
        c = line[i]
        if c == "#":
            break
        if c in "\"'":
            if line.startswith(c * 3, i):
                quote, i = c * 3, i + 3
                continue
            i += 1
            while i < n and line[i] != c:
                i += 2 if line[i] == "\\" else 1
            i += 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
        i += 1
    return depth, quote, line.rstrip().endswith("\\") and quote is None


def _without_top_level_await(lines: list[str], tree: ast.Module) -> list[str]:
    """The lines without the top-level statements that `await` (IPython allows them; they are
    calls or loops, which never run here, and plain Python cannot compile them)."""
    out = list(lines)
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if any(isinstance(n, ast.Await | ast.AsyncFor | ast.AsyncWith) for n in ast.walk(stmt)):
            for n in range(stmt.lineno - 1, stmt.end_lineno or stmt.lineno):
                out[n] = ""
    return out


def _inputs_def_lines(lines: Sequence[str]) -> list[int]:
    """0-based lines of a cell's top-level `def example_inputs` (decorators included)."""
    try:
        tree = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return []
    out: list[int] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "example_inputs":
            first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
            out.extend(range(first - 1, stmt.end_lineno or stmt.lineno))
    return out


# ---------------------------------------------------------------------------------------------
# Locations for people and JSON (the CLI)


def location(path: str, program: Program, line: int | None) -> str:
    """`NOTEBOOK.ipynb:CELL:LINE` (or just the path when there is no line)."""
    return f"{path}:{program.label(line)}" if line else path


def relabel(message: str, path: str, program: Program) -> str:
    """A message with each `NOTEBOOK.ipynb:N` (a program line, as the worker writes
    locations) as `NOTEBOOK.ipynb:CELL:LINE`."""
    name = re.escape(os.path.basename(path))
    return re.sub(rf"({name}):(\d+)\b(?!:\d)",
                  lambda m: f"{m.group(1)}:{program.label(int(m.group(2)))}", message)


def relocate_json(value: object, path: str, program: Program) -> object:
    """A JSON result with each notebook line (`line`, `error_line` beside a `file` that is the
    notebook, or no `file`) as its cell line, and the cell number next to it (`cell`,
    `error_cell`), and `NOTEBOOK.ipynb:N` in messages as `NOTEBOOK.ipynb:CELL:LINE`."""
    if isinstance(value, list):
        return [relocate_json(v, path, program) for v in value]
    if isinstance(value, str):
        return relabel(value, path, program) if SUFFIX in value else value
    if not isinstance(value, dict):
        return value
    out = {k: relocate_json(v, path, program) for k, v in value.items()}
    file = out.get("file")
    if file is None or (isinstance(file, str) and _same(file, path)):
        for key, cell_key in (("line", "cell"), ("error_line", "error_cell")):
            line = out.get(key)
            if isinstance(line, int) and not isinstance(line, bool):
                where = program.to_cell(line)
                if where is not None:
                    out[cell_key], out[key] = where[0].number, where[1]
    return out


def _same(a: str, b: str) -> bool:
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))

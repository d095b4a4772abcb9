"""What to check: every module of every file (the editor's discovery), then this shard's part.

Static only (the AST, no user code), so every shard of a CI matrix computes the same list
from the same checkout and takes a disjoint, contiguous slice of it. A notebook is planned as
the program of its code cells (`repo_check.notebook_modules`); its modules' lines are program lines
here (the order and the jobs), cell lines in the report. An ONNX model is one module, its graph,
named from the file's bytes (`source/onnx_header.py`, no onnx), with no line (0).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.repo_check.onnx_models import INPUTS, is_model
from torch_mlir_lens.repo_check.paths import rel_path


@dataclass(frozen=True)
class ModuleTask:
    """One module to check: where it is and how its inputs are found."""

    path: str  # absolute
    rel: str  # relative to the project root, '/'-separated (report and baseline key)
    name: str  # an ONNX model's: its graph's
    line: int  # for a notebook: the line of its cells' program; an ONNX model: 0 (none)
    inputs: str  # discovery's status: "comment", "convention", ..., "missing"; "model" (ONNX)

    @property
    def key(self) -> str:
        """`rel::name`: how the module is named in reports, baselines and shards."""
        return f"{self.rel}::{self.name}"


@dataclass(frozen=True)
class FileProblem:
    """A file that could not be read or parsed: reported at its line, checked no further."""

    path: str
    rel: str
    line: int | None
    kind: str  # "syntax-error" | "load-error"
    message: str
    cell: int | None = None  # a notebook's cell (then `line` is within it)


@dataclass
class Plan:
    """Modules in a fixed order (path, line), files that failed, the source texts, the
    notebooks among the files and the cells left out of them (warnings, not failures)."""

    tasks: list[ModuleTask]
    problems: list[FileProblem]
    texts: dict[str, str]
    notebooks: dict[str, Any] = field(default_factory=dict)  # path → NotebookSource
    cell_warnings: list[FileProblem] = field(default_factory=list)

    def text_of(self, task: ModuleTask) -> str | None:
        """The text `task`'s module is lowered from (in a notebook: the cells up to its own);
        None for an ONNX model (the engine keys its job by the model's digest)."""
        source = self.notebooks.get(task.path)
        if source is not None:
            return source.module_text(task.name)
        return self.texts.get(task.path)


def plan_modules(files: list[str], root: str, example_inputs: dict[str, str],
                 module: str | None = None) -> Plan:
    """Discover the modules of `files` (as the editor does, with the project's inputs)."""
    from torch_mlir_lens.discovery import find_modules

    tasks: list[ModuleTask] = []
    problems: list[FileProblem] = []
    texts: dict[str, str] = {}
    plan = Plan(tasks, problems, texts)
    for path in files:
        rel = rel_path(path, root)
        if is_model(path):
            graph = _graph(path, rel, plan)
            if graph is not None and module in (None, graph):
                tasks.append(ModuleTask(path, rel, graph, 0, INPUTS))
            continue
        text = _read(path, rel, plan)
        if text is None:
            continue
        texts[path] = text
        infos = find_modules(text, path, settings_inputs=example_inputs, workspace=root)
        if path in plan.notebooks:
            plan.notebooks[path].modules = infos
        for info in infos:
            if module is None or info.name == module:
                tasks.append(ModuleTask(path, rel, info.name, info.line, info.inputs))
    tasks.sort(key=lambda t: (t.rel, t.line, t.name))
    return plan


def _graph(path: str, rel: str, plan: Plan) -> str | None:
    """An ONNX model's graph name, or None after recording why the file is no model."""
    from torch_mlir_lens.source.onnx_header import NotAModel, graph_name

    try:
        return graph_name(path)
    except NotAModel as exc:
        plan.problems.append(FileProblem(path, rel, None, "load-error", exc.message))
    except OSError as exc:
        plan.problems.append(FileProblem(path, rel, None, "load-error",
                                         f"cannot read the file: {exc}"))
    return None


def _read(path: str, rel: str, plan: Plan) -> str | None:
    """The Python text of a file (a notebook: its cells' program), or None after recording
    why it cannot be checked."""
    from torch_mlir_lens.repo_check.notebook_modules import NotebookSource
    from torch_mlir_lens.source import notebook_program
    from torch_mlir_lens.source.decoding import SourceError, read_source

    try:
        if notebook_program.is_notebook(path):
            program = notebook_program.read_program(path)
            plan.notebooks[path] = NotebookSource(program, [])
            plan.cell_warnings += [
                FileProblem(path, rel, p.line, "syntax-error",
                            f"{p.message}: this cell does not parse and is left out",
                            p.index + 1) for p in program.problems]
            return program.text
        text = read_source(path)
    except (OSError, UnicodeDecodeError) as exc:
        plan.problems.append(FileProblem(path, rel, None, "load-error",
                                         f"cannot read the file: {exc}"))
        return None
    except SourceError as exc:
        plan.problems.append(FileProblem(path, rel, exc.line, "load-error",
                                         f"cannot read the file: {exc.message}"))
        return None
    except notebook_program.NotebookError as exc:  # a file line of the .ipynb (its JSON)
        plan.problems.append(FileProblem(path, rel, exc.line, "load-error", exc.message))
        return None
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        plan.problems.append(FileProblem(path, rel, exc.lineno, "syntax-error",
                                         f"syntax error: {exc.msg}"))
        return None
    return text


_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` → (I, N), 1 ≤ I ≤ N; ValueError with a readable message otherwise."""
    m = _SHARD.match(text)
    if not m:
        raise ValueError(f"--shard expects I/N (e.g. 1/4), got {text!r}")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ValueError(f"--shard {text}: I must be between 1 and N")
    return index, count


def shard(tasks: list[ModuleTask], index: int, count: int) -> list[ModuleTask]:
    """The `index`-th of `count` contiguous, near-equal slices (1-based) of the ordered tasks.

    Contiguous: a shard keeps the modules of a file together, so a file is loaded by as few
    machines as possible. Every module lands in exactly one shard.
    """
    n = len(tasks)
    start = (index - 1) * n // count
    end = index * n // count
    return tasks[start:end]

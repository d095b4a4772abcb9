"""What to check: every module of every file (the editor's discovery), then this shard's part.

Static only (the AST, no user code), so every shard of a CI matrix computes the same list
from the same checkout and takes a disjoint, contiguous slice of it.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ModuleTask:
    """One module to check: where it is and how its inputs are found."""

    path: str  # absolute
    rel: str  # relative to the project root, '/'-separated (report and baseline key)
    name: str
    line: int
    inputs: str  # discovery's status: "comment", "convention", ..., "missing"

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


@dataclass
class Plan:
    """Modules in a fixed order (path, line), files that failed, and the source texts."""

    tasks: list[ModuleTask]
    problems: list[FileProblem]
    texts: dict[str, str]


def rel_path(path: str, root: str) -> str:
    """`path` relative to `root` with '/' separators (absolute when outside the root)."""
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


def plan_modules(files: list[str], root: str, example_inputs: dict[str, str],
                 module: str | None = None) -> Plan:
    """Discover the modules of `files` (as the editor does, with the project's inputs)."""
    from torch_mlir_lens.discovery import find_modules

    tasks: list[ModuleTask] = []
    problems: list[FileProblem] = []
    texts: dict[str, str] = {}
    for path in files:
        rel = rel_path(path, root)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(FileProblem(path, rel, None, "load-error",
                                        f"cannot read the file: {exc}"))
            continue
        try:
            ast.parse(text, filename=path)
        except SyntaxError as exc:
            problems.append(FileProblem(path, rel, exc.lineno, "syntax-error",
                                        f"syntax error: {exc.msg}"))
            continue
        texts[path] = text
        for info in find_modules(text, path, settings_inputs=example_inputs, workspace=root):
            if module is None or info.name == module:
                tasks.append(ModuleTask(path, rel, info.name, info.line, info.inputs))
    tasks.sort(key=lambda t: (t.rel, t.line, t.name))
    return Plan(tasks, problems, texts)


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

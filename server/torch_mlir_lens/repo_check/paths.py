"""From the PATHs of `check` to the Python files and notebooks to look at, in a fixed order.

Files, folders (walked recursively) and globs (`models/**/*.py`, expanded here so quoting
does not matter). Folders skip what a repository does not track: `.gitignore` rules (of the
walked folders and their parents up to the repository root), hidden folders, `__pycache__`,
`node_modules`, `site-packages`, Jupyter's `.ipynb_checkpoints` and virtual environments
(globs do not reach into hidden folders either). The `exclude` patterns (relative to the
project root) apply to everything, also to files named on the command line, so a pre-commit
hook that passes changed files still honours them.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from torch_mlir_lens.repo_check.ignore import Pattern, compile_pattern, matches, read_ignore_file

_SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", ".ipynb_checkpoints"}
_SUFFIXES = (".py", ".ipynb")  # Python files and Jupyter notebooks
_GLOB_CHARS = set("*?[")


class PathError(Exception):
    """A PATH that names nothing (exit 2)."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


@dataclass
class Collected:
    """The files to check (absolute, sorted, unique) and what was left out and why."""

    files: list[str] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (named path, pattern)


def _parent_ignores(folder: str) -> list[Pattern]:
    """`.gitignore` patterns of `folder`'s ancestors up to the repository root, outer first."""
    chain: list[str] = []
    here = os.path.abspath(folder)
    while True:
        parent = os.path.dirname(here)
        if os.path.exists(os.path.join(here, ".git")) or parent == here:
            break
        here = parent
        chain.append(here)
    patterns: list[Pattern] = []
    for ancestor in reversed(chain):
        patterns += read_ignore_file(os.path.join(ancestor, ".gitignore"))
    return patterns


def _is_venv(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "pyvenv.cfg"))


def _walk(top: str, inherited: list[Pattern], exclude: list[Pattern], out: Collected) -> None:
    stack = [(os.path.abspath(top), inherited)]
    while stack:
        folder, patterns = stack.pop()
        here = patterns + read_ignore_file(os.path.join(folder, ".gitignore"))
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            path = entry.path
            is_dir = entry.is_dir()
            if is_dir and (entry.name.startswith(".") or entry.name in _SKIPPED_DIRS
                           or _is_venv(path)):
                continue
            if matches(here, path, is_dir) or matches(exclude, path, is_dir):
                continue
            if is_dir:
                subdirs.append((path, here))
            elif entry.name.endswith(_SUFFIXES) and entry.is_file():
                out.files.append(path)
        stack.extend(reversed(subdirs))


def collect(paths: list[str], exclude: list[str], root: str) -> Collected:
    """The Python files and notebooks under `paths`; `exclude` patterns are relative to
    `root`."""
    ex = [p for p in (compile_pattern(line, root) for line in exclude) if p is not None]
    out = Collected()
    for named in paths:
        if os.path.exists(named):
            targets = [named]
        elif _GLOB_CHARS & set(named):
            targets = sorted(glob.glob(named, recursive=True))
            if not targets:
                raise PathError("no file matches this pattern", named)
        else:
            raise PathError("no such file or folder", named)
        for target in targets:
            path = os.path.abspath(target)
            hit = matches(ex, path, os.path.isdir(path))
            if hit is not None:
                out.excluded.append((named, hit.source))
                continue
            if os.path.isdir(path):
                _walk(path, _parent_ignores(path), ex, out)
            elif path.endswith(_SUFFIXES) or target == named:
                out.files.append(path)
    out.files = sorted(dict.fromkeys(out.files))
    return out


def rel_path(path: str, root: str) -> str:
    """`path` relative to `root` with '/' separators (absolute when outside the root)."""
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")

"""From the PATHs of `check` to the Python files, notebooks and ONNX models to look at, in a
fixed order.

Files, folders (walked recursively) and globs (`models/**/*.py`, expanded here so quoting
does not matter). Folders skip what a repository does not track: `.gitignore` rules (of the
walked folders and their parents up to the repository root), hidden folders, `__pycache__`,
`node_modules`, `site-packages`, Jupyter's `.ipynb_checkpoints` and virtual environments
(globs do not reach into hidden folders either). The `exclude` patterns (relative to the
project root) apply to everything, also to files named on the command line, so a pre-commit
hook that passes changed files still honours them. Symbolic links are followed, each real
folder walked once; a link to a folder that contains it (a loop) is skipped with a warning.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torch_mlir_lens.project.config import repository_root
from torch_mlir_lens.repo_check.ignore import (
    Pattern,
    compile_pattern,
    glob_regex,
    matches,
    read_ignore_file,
)

_SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", ".ipynb_checkpoints"}
_SUFFIXES = (".py", ".ipynb", ".onnx")  # Python files, Jupyter notebooks, ONNX models
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
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (path, what was skipped)

    def warn(self, path: str, message: str) -> None:
        if (path, message) not in self.warnings:
            self.warnings.append((path, message))


def _parent_ignores(folder: str) -> list[Pattern]:
    """`.gitignore` patterns of `folder`'s ancestors up to the repository root, outer first;
    none above `folder` when it is in no repository (a shared parent folder's `.gitignore`
    hides nothing of a project, as its pyproject.toml configures nothing)."""
    here = Path(os.path.abspath(folder))
    root = repository_root(here)
    chain = [str(p) for p in here.parents if root is not None and p.is_relative_to(root)]
    patterns: list[Pattern] = []
    for ancestor in reversed(chain):  # outer first
        patterns += read_ignore_file(os.path.join(ancestor, ".gitignore"))
    return patterns


def _is_venv(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "pyvenv.cfg"))


class _Folders:
    """Which folders to walk: each real folder once, whatever names lead to it.

    Symbolic links to folders are followed after every folder reached without one, so a
    folder's files keep the names they have in the tree; a link to a folder already walked
    is passed over, and a link to a folder that contains it (a loop: `ln -s . self`) is
    skipped with a warning instead of being walked until the system refuses.
    """

    def __init__(self, out: Collected) -> None:
        self.out = out
        self.walked: set[str] = set()
        self.links: list[tuple[str, Any]] = []  # (link, what the walk needs to resume there)

    def enter(self, folder: str) -> bool:
        """Whether to walk `folder` now (and remember it as walked)."""
        real = os.path.realpath(folder)
        if real in self.walked:
            return False
        self.walked.add(real)
        return True

    def follow_later(self, link: str, state: Any) -> None:
        self.links.append((link, state))

    def next_link(self) -> tuple[str, Any] | None:
        """The next link to follow, loops reported and skipped; None when none is left."""
        while self.links:
            link, state = self.links.pop(0)
            real = os.path.realpath(link)
            home = os.path.realpath(os.path.dirname(link))
            if home == real or home.startswith(real.rstrip(os.sep) + os.sep):
                self.out.warn(link, "a symbolic link to a folder that contains it (a loop): "
                                    "skipped")
                continue
            if self.enter(link):
                return link, state
        return None


def _scan(folder: str, out: Collected) -> list[tuple[os.DirEntry[str], bool]]:
    """A folder's entries, sorted, each with whether it is a folder (links followed); an
    entry that cannot be looked at (a link to itself) is left out with a warning."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        try:
            found.append((entry, entry.is_dir()))
        except OSError as exc:
            out.warn(entry.path, f"cannot be read ({exc.strerror or exc}): skipped")
    return found


def _walk(top: str, exclude: list[Pattern], out: Collected, folders: _Folders) -> None:
    stack = [(os.path.abspath(top), _parent_ignores(top))]
    while True:
        if not stack:
            link = folders.next_link()
            if link is None:
                return
            stack.append(link)
        folder, patterns = stack.pop()
        here = patterns + read_ignore_file(os.path.join(folder, ".gitignore"))
        subdirs = []
        for entry, is_dir in _scan(folder, out):
            path = entry.path
            if is_dir and (entry.name.startswith(".") or entry.name in _SKIPPED_DIRS
                           or _is_venv(path)):
                continue
            if matches(here, path, is_dir) or matches(exclude, path, is_dir):
                continue
            if is_dir and entry.is_symlink():
                folders.follow_later(path, here)
            elif is_dir:
                if folders.enter(path):
                    subdirs.append((path, here))
            elif entry.name.endswith(_SUFFIXES) and entry.is_file():
                out.files.append(path)
        stack.extend(reversed(subdirs))


def _recursive_glob(pattern: str, out: Collected) -> list[str]:
    """The paths a pattern with a `**` component matches, as `glob` finds them (hidden names
    left out), with folders walked once each: `glob` itself follows symbolic links into
    loops. What comes before the first `**` is expanded by `glob` (it does not recurse)."""
    parts = pattern.split(os.sep)
    first = parts.index("**")
    head = os.sep.join(parts[:first]) or (os.sep if pattern.startswith(os.sep) else "")
    regex = re.compile(f"^{glob_regex('/'.join(parts[first:]))}$")
    bases = sorted(glob.glob(head)) if _GLOB_CHARS & set(head) else [head]
    return sorted(path for base in bases for path in _glob_under(base, regex, out))


def _glob_under(base: str, regex: re.Pattern[str], out: Collected) -> list[str]:
    """The paths under folder `base` whose path relative to it matches `regex`."""
    top = base or os.curdir
    if not os.path.isdir(top):
        return []
    found: list[str] = []

    def take(path: str) -> None:
        rel = os.path.relpath(path, top).replace(os.sep, "/")
        if regex.match(rel):
            found.append(os.path.join(base, rel) if base else rel)

    folders = _Folders(out)
    stack = [top] if folders.enter(top) else []
    while True:
        if not stack:
            link = folders.next_link()
            if link is None:
                return found
            take(link[0])  # a link to a folder counts once it is followed
            stack.append(link[0])
        for entry, is_dir in _scan(stack.pop(), out):
            if entry.name.startswith("."):
                continue
            if is_dir and entry.is_symlink():
                folders.follow_later(entry.path, None)
                continue
            take(entry.path)
            if is_dir and folders.enter(entry.path):
                stack.append(entry.path)


def _expand(named: str, out: Collected) -> list[str]:
    if "**" in named.split(os.sep):
        return _recursive_glob(named, out)
    return sorted(glob.glob(named))


def collect(paths: list[str], exclude: list[str], root: str) -> Collected:
    """The Python files, notebooks and ONNX models under `paths`; `exclude` patterns are relative to
    `root`. A file reached by several names (links) is checked once, under the name it has
    without links when it has one."""
    ex = [p for p in (compile_pattern(line, root) for line in exclude) if p is not None]
    out = Collected()
    folders = _Folders(out)
    for named in paths:
        if os.path.exists(named):
            targets = [named]
        elif _GLOB_CHARS & set(named):
            targets = _expand(named, out)
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
                if folders.enter(path):
                    _walk(path, ex, out, folders)
            elif path.endswith(_SUFFIXES) or target == named:
                out.files.append(path)
    out.files = _once_each(out.files)
    return out


def _once_each(files: list[str]) -> list[str]:
    """Sorted, each real file once: under its own name if listed so, else its first name."""
    chosen: dict[str, str] = {}
    for path in sorted(dict.fromkeys(files)):
        real = os.path.realpath(path)
        if real not in chosen or path == real:
            chosen[real] = path
    return sorted(chosen.values())


def rel_path(path: str, root: str) -> str:
    """`path` relative to `root` with '/' separators (absolute when outside the root)."""
    rel = os.path.relpath(path, root)
    return path if rel.startswith("..") else rel.replace(os.sep, "/")

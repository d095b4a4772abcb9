"""Where a module's `forward` returns: the line for a failure no op of the IR carries.

A `forward` that returns a plain Python value (`return x.shape[1]`) exports to a constant with
no location at all, yet TOSA rejects exactly that value. Its line is found in the source:
the `return` statements of `forward` in the class the job lowers, read with `ast` (the file
is not run again).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from dataclasses import dataclass

from torch_mlir_lens.system.reading import read_text
from torch_mlir_lens.worker.process import WORKER


@dataclass(frozen=True)
class ForwardSite:
    """A module's `forward`: its file, the `def` line and the lines of its `return`s."""

    file: str
    def_line: int
    return_lines: tuple[int, ...]

    @property
    def last_return(self) -> int:
        """The last `return` (the `def` line when there is none)."""
        return self.return_lines[-1] if self.return_lines else self.def_line


_MAX_PARSED = 64


def _tree(path: str) -> ast.Module | None:
    try:
        stamp = os.stat(path).st_mtime
    except OSError:
        return None
    parsed = WORKER.cache(f"{__name__}.parsed", _MAX_PARSED)  # (path, mtime) → tree or None
    key = (path, stamp)
    if key not in parsed:
        try:
            parsed.put(key, ast.parse(read_text(path), filename=path))
        except (OSError, SyntaxError, ValueError):
            parsed.put(key, None)
    return parsed.peek(key)  # type: ignore[no-any-return]


def _class(tree: ast.Module, dotted: str) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    found: ast.ClassDef | None = None
    for part in dotted.split("."):
        found = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == part), None)
        if found is None:
            return None
        body = found.body
    return found


def _returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, ...]:
    """Lines of `fn`'s own `return` statements (not those of nested functions)."""
    lines: list[int] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            lines.append(node.lineno)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return tuple(sorted(lines))


def forward_site(files: Iterable[str], class_name: str) -> ForwardSite | None:
    """`class_name.forward` in the first of `files` that defines the class (None if none)."""
    for path in files:
        tree = _tree(path) if path.endswith(".py") else None
        cls = _class(tree, class_name) if tree is not None else None
        if cls is None:
            continue
        fn = next((n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and n.name == "forward"), None)
        if fn is None:
            return ForwardSite(path, cls.lineno, ())
        return ForwardSite(path, fn.lineno, _returns(fn))
    return None


__all__ = ["ForwardSite", "forward_site"]

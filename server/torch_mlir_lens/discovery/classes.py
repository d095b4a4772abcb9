"""Which classes of a file are `nn.Module` classes, following bases into sibling files.

A class is a module class when a base is `torch.nn.Module` or a torch.nn layer (through any
import alias), a Lightning `LightningModule`, another module class of the same file
(transitively, nested `Outer.Inner` too), or a module class of a sibling file it imports
(`from layers import Block` / `from .layers import Block`, up to three files deep).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from torch_mlir_lens.discovery.caches import note_stamp
from torch_mlir_lens.discovery.names import (
    dotted_name,
    import_aliases,
    is_torch_module_qualname,
    qualify,
)
from torch_mlir_lens.discovery.parsing import parse_tolerant
from torch_mlir_lens.system.reading import read_text

# Module class names of the files imported from, by (path, mtime, size).

_SIBLING_CACHE: dict[tuple[str, int, int], frozenset[str]] = {}


def _sibling_path(qual: str, folder: str) -> tuple[str, str] | None:
    """(file, class) for `layers.Block` / `.layers.Block` / `pkg.layers.Block` next to `folder`."""
    stripped = qual.lstrip(".")
    if "." not in stripped:
        return None
    mod, _, cls = stripped.rpartition(".")
    rel = os.path.join(*mod.split("."))
    for candidate in (rel + ".py", os.path.join(rel, "__init__.py")):
        full = os.path.join(folder, candidate)
        if os.path.isfile(full):
            return full, cls
    return None


def _module_classes_of_file(path: str, depth: int) -> frozenset[str]:
    """Names of the module classes defined in another file (cached by mtime and size)."""
    try:
        st = os.stat(path)
        key = (path, st.st_mtime_ns, st.st_size)
        note_stamp(path, st)
        if key in _SIBLING_CACHE:
            return _SIBLING_CACHE[key]
        text = read_text(path, errors="replace")  # bounded, regular files only
    except OSError:
        return frozenset()
    body = parse_tolerant(text)
    names = frozenset(module_class_names(body, import_aliases(body), path, depth + 1))
    _SIBLING_CACHE[key] = names
    return names


@dataclass
class FoundClass:
    """A class statement of the file and its dotted qualified name (`Outer.Inner`)."""

    node: ast.ClassDef
    qualname: str


def collect_classes(body: list[ast.stmt], prefix: str = "") -> list[FoundClass]:
    """Classes at top level and nested in classes (in source order)."""
    found: list[FoundClass] = []
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            qual = prefix + stmt.name
            found.append(FoundClass(stmt, qual))
            found.extend(collect_classes(stmt.body, qual + "."))
        elif isinstance(stmt, ast.If | ast.Try):
            # Classes defined conditionally (e.g. under `if HAVE_X:`) are still reachable.
            inner = list(stmt.body) + list(getattr(stmt, "orelse", []))
            for handler in getattr(stmt, "handlers", []):
                inner.extend(handler.body)
            found.extend(collect_classes(inner, prefix))
    return found


def module_class_names(
    body: list[ast.stmt], aliases: dict[str, str], path: str | None, depth: int = 0,
) -> set[str]:
    """Simple names of the module classes among `body`'s classes (fixed point over bases)."""
    classes = collect_classes(body)
    modules: set[str] = set()
    folder = os.path.dirname(os.path.abspath(path)) if path else None
    changed = True
    while changed:
        changed = False
        for c in classes:
            if c.node.name in modules:
                continue
            if any(_base_is_module(b, aliases, modules, folder, depth) for b in c.node.bases):
                modules.add(c.node.name)
                changed = True
    return modules


def _base_is_module(
    base: ast.expr, aliases: dict[str, str], local: set[str], folder: str | None, depth: int,
) -> bool:
    dotted = dotted_name(base)
    if dotted is None:
        return False
    if dotted in local:
        return True  # a module class of this file
    head, _, _ = dotted.partition(".")
    if "." in dotted and head not in aliases and dotted.rsplit(".", 1)[-1] in local:
        return True  # `Outer.Inner` nested in this file
    qual = qualify(dotted, aliases)
    if is_torch_module_qualname(qual):
        return True
    if folder and depth < 3 and head in aliases:
        found = _sibling_path(qual, folder)
        if found:
            return found[1] in _module_classes_of_file(found[0], depth)
    return False

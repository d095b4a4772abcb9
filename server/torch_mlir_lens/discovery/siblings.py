"""Derived inputs across files: module classes of sibling files that use this file's classes.

A class without inputs of its own gets inputs "derived" from a module class with inputs in a
.py file of the same folder that imports and uses it (`model.py::Net` using `layers.Block`);
the worker then records what that parent passes it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from torch_mlir_lens.discovery.analyzer import Analyzer
from torch_mlir_lens.discovery.caches import note_stamp, read_stamped
from torch_mlir_lens.discovery.model import ModuleInfo

# Analyses another file (path, text) without looking at its own siblings.
AnalyzeFile = Callable[[str, str], tuple[list[ModuleInfo], Analyzer]]
_MAX_SIBLING_FILES = 200  # a huge folder is not worth a slower keystroke


def link_sibling_parents(path: str, missing: list[ModuleInfo], analyze: AnalyzeFile) -> None:
    """Fill `sibling_parents` of `missing` classes from the .py files next to `path`.

    `analyze` finds the modules of a sibling file (the caller's analysis, passed in because
    that analysis is what calls this).
    """
    wanted = {i.name: i for i in missing if i.kind == "class" and "." not in i.name}
    if not wanted:
        return
    path = os.path.abspath(path)
    folder, base = os.path.split(path)
    stem = os.path.splitext(base)[0]
    try:
        st = os.stat(folder)  # its mtime changes when files are added or removed
        note_stamp(folder, st)
        files = sorted(f for f in os.listdir(folder) if f.endswith(".py") and f != base)
    except OSError:
        return
    for fname in files[:_MAX_SIBLING_FILES]:
        text = read_stamped(os.path.join(folder, fname))
        if text is None or stem not in text:
            continue
        users = _sibling_users(os.path.join(folder, fname), text, stem, set(wanted), analyze)
        for cls, parent in users:
            wanted[cls].sibling_parents.append(f"{fname}::{parent}")


def _sibling_users(
    file: str, text: str, stem: str, names: set[str], analyze: AnalyzeFile,
) -> Iterator[tuple[str, str]]:
    """(our class, their class) for each module class of `file` with inputs that uses ours."""
    infos, an = analyze(file, text)
    local: dict[str, str] = {}  # their name → our class
    for alias, qual in an.aliases.items():
        module, _, cls = qual.lstrip(".").rpartition(".")
        if module.rsplit(".", 1)[-1] == stem and cls in names:
            local[alias] = cls
        elif qual.lstrip(".").rsplit(".", 1)[-1] == stem:  # `import layers`: layers.Block
            local.update({n: n for n in names})
    if not local:
        return
    by_name = {c.qualname: c for c in an.classes}
    for info in infos:
        known = info.inputs not in ("missing", "derived")  # the worker records from these
        if info.kind != "class" or not known or info.name not in by_name:
            continue
        used = an.scan(by_name[info.name].node)[0]
        for their, ours in sorted(local.items()):
            if their in used:
                yield ours, info.name

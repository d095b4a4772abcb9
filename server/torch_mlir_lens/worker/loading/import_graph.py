"""Which module imported which, for the life of the worker: what a lowering depends on.

A warm worker keeps every module it ever imported, so "everything imported so far" is far more
than what one module's code uses: with it, editing one file would make the persistent cache
forget the answers of every other file the same worker lowered. Here every import statement
(`__import__`) and `importlib.import_module` call made by code loaded after start-up records an
edge importer → imported module; a lowering then depends on what its module reaches through
these edges, plus what its job loaded by path (a parent whose forward pass gives it its
inputs), plus, to stay safe, any module that appeared during the job without an edge (an import
by other means). Modules of the worker's start-up (torch, torch-mlir) record nothing.
"""

from __future__ import annotations

import builtins
import importlib
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.worker.process import WORKER


@dataclass
class _Imports:
    """Who imported whom since start-up, and what was there before."""

    edges: dict[str, set[str]] = field(default_factory=dict)
    preloaded: frozenset[str] = frozenset()  # the start-up's modules: they record nothing
    job_start: frozenset[str] = frozenset()  # sys.modules when the current job began
    installed: bool = False


def _imports() -> _Imports:
    return WORKER.part(_Imports)


def installed() -> bool:
    """Whether the worker records imports (a job run in-process by a test does not)."""
    return _imports().installed


def install(preloaded: Iterable[str]) -> None:
    """Record imports from now on, for code not among `preloaded` (the start-up's modules).

    Installed before the hygiene baseline is taken, so restoring the standard library after a
    job keeps the recorder.
    """
    state = _imports()
    if state.installed:
        return
    state.preloaded = frozenset(preloaded)
    real_import = builtins.__import__
    real_import_module = importlib.import_module

    def traced_import(name: str, globals: Any = None, locals: Any = None,
                      fromlist: Any = (), level: int = 0) -> types.ModuleType:
        module = real_import(name, globals, locals, fromlist, level)
        importer = globals.get("__name__") if isinstance(globals, dict) else None
        if isinstance(importer, str) and importer not in state.preloaded:
            _record(importer, module, name if level == 0 else None, fromlist)
        return module

    def traced_import_module(name: str, package: str | None = None) -> types.ModuleType:
        module = real_import_module(name, package)
        importer = sys._getframe(1).f_globals.get("__name__")
        if isinstance(importer, str) and importer not in state.preloaded:
            _record(importer, module, module.__name__, ())
        return module

    builtins.__import__ = traced_import
    importlib.import_module = traced_import_module  # type: ignore[assignment]
    state.installed = True


def _record(importer: str, module: types.ModuleType, absolute: str | None,
            fromlist: Any) -> None:
    targets = _imports().edges.setdefault(importer, set())
    targets.add(module.__name__)
    if absolute:
        targets.add(absolute)  # `import a.b`: the module a.b, not only the package a
    for item in fromlist or ():
        value = getattr(module, item, None) if isinstance(item, str) else None
        if isinstance(value, types.ModuleType):
            targets.add(value.__name__)


def begin_job() -> None:
    """A job starts: modules that appear from now on without an edge count for it."""
    _imports().job_start = frozenset(sys.modules)


def reached_from(roots: Iterable[str]) -> set[str]:
    """The modules `roots` import, directly or not (with the roots and their packages), plus
    the modules that appeared since `begin_job` (none escapes: imports by other means)."""
    state = _imports()
    seen: set[str] = set()
    todo = [r for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(state.edges.get(name, ()))
        parent = name.rpartition(".")[0]
        if parent:
            todo.append(parent)  # a module's package __init__ ran to import it
    return seen | (set(sys.modules) - state.job_start - state.preloaded)

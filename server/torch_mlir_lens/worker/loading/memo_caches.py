"""Memoised results that a build or a trace without real values left behind, forgotten.

A library may memoise what its constructor computes: e3nn's Clebsch-Gordan tables, an ODE
solver's Butcher tableau, a grid of frequencies, each a `functools.lru_cache` (or `cache`)
on a helper returning tensors. The worker builds a module on the meta device first and runs
forwards on fake tensors (the export, the blocks' survey): a helper called there caches a meta
or fake tensor, and the next build with real weights in the same process gets that tensor
back (`Tensor.item() cannot be called on meta tensors`) where plain torch-mlir, which builds
once, works.

`watching()` notes the miss count of every `lru_cache` of code loaded after the worker started
(the user's files and the libraries they import; not torch's, not the standard library's)
before such a phase, and clears those whose count grew after it: every result it can have
cached during the phase is gone, and the next call computes it again. Other entries of those
caches go too: a cache is a cache. The helpers are found in module namespaces and in the
namespaces of the classes defined there (methods, static and class methods), each module
scanned once until its namespace changes, so a watch costs well under a millisecond.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.worker.loading import loader
from torch_mlir_lens.worker.process import WORKER

_LRU_TYPE: type = type(functools.lru_cache(maxsize=None)(lambda: None))

# Caches of these packages hold no user tensors; clearing them would only cost their work.
_NEVER = ("torch", "torch_mlir", "torch_mlir_lens", "functorch", "sympy", "numpy")

@dataclass
class _Found:
    """module name → (id of the module, its namespace's size, the caches found in it)."""

    modules: dict[str, tuple[int, int, tuple[Any, ...]]] = field(default_factory=dict)


def _cache_of(value: Any) -> Any | None:
    if isinstance(value, staticmethod | classmethod):
        value = value.__func__
    return value if type(value) is _LRU_TYPE else None


def _scan(namespace: dict[str, Any], module_name: str, depth: int = 0) -> list[Any]:
    """The lru caches among `namespace`'s values and, for classes defined in `module_name`,
    among their own attributes (nested classes included, a few levels deep)."""
    out: list[Any] = []
    for value in list(namespace.values()):
        cache = _cache_of(value)
        if cache is not None:
            out.append(cache)
        elif (isinstance(value, type) and depth < 3
              and getattr(value, "__module__", None) == module_name):
            with contextlib.suppress(Exception):  # a class whose __dict__ is unusual
                out.extend(_scan(dict(vars(value)), module_name, depth + 1))
    return out


@functools.cache
def _ours(name: str) -> bool:
    top = name.partition(".")[0]
    return top not in _NEVER and top not in sys.stdlib_module_names


def caches() -> list[Any]:
    """Every lru cache in the namespaces of modules loaded after the worker started."""
    found: list[Any] = []
    alive: set[str] = set()
    seen = WORKER.part(_Found).modules
    for name, module in loader.modules_loaded_since_start():
        if not _ours(name) or not isinstance(module, types.ModuleType):
            continue
        alive.add(name)
        try:
            namespace = vars(module)  # never getattr: a lazy module would import on it
        except TypeError:
            continue
        known = seen.get(name)
        if known is None or known[0] != id(module) or known[1] != len(namespace):
            known = (id(module), len(namespace), tuple(_scan(dict(namespace), name)))
            seen[name] = known
        found.extend(known[2])
    for gone in seen.keys() - alive:
        del seen[gone]
    return found


def _misses(cache: Any) -> int:
    try:
        return int(cache.cache_info().misses)
    except Exception:
        return -1


def _name(cache: Any) -> str:
    return f"{getattr(cache, '__module__', '?')}.{getattr(cache, '__qualname__', '?')}"


@contextlib.contextmanager
def watching(cleared: Callable[[list[str]], None] | None = None) -> Iterator[None]:
    """Around a phase without real values: clear each cache it added entries to, when it
    ends (normally or not); `cleared` receives the names of the caches cleared, if any."""
    before = {id(c): (c, _misses(c)) for c in caches()}
    try:
        yield
    finally:
        names = []
        for cache in caches():
            known = before.get(id(cache))
            if known is None or _misses(cache) != known[1]:
                with contextlib.suppress(Exception):
                    cache.cache_clear()
                    names.append(_name(cache))
        if names and cleared is not None:
            cleared(names)


__all__ = ["caches", "watching"]

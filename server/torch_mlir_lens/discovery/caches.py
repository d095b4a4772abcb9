"""The caches that keep discovery fast on every keystroke, and the file stamps that void them.

- Per-node facts (`node_cache_get`/`node_cache_put`): valid while the parsed node lives in the
  parser's chunk cache, so an edit re-analyses only the class it touches.
- Files read next to the analysed one (`read_stamped`), cached by mtime and size; each stat is
  noted (`note_stamp`) while a result is computed (`noting_consulted`).
- Whole results (`cached_result`/`store_result`): the language server asks again for an
  unchanged document (lenses, hover, diagnostics); a hit is void when a consulted file changed.
"""

from __future__ import annotations

import ast
import copy
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from torch_mlir_lens.discovery.model import ModuleInfo
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.system.reading import read_text

# Per-node results, valid as long as the node object is alive in the chunk cache: the entry
# holds the node, so its id cannot be reused while the entry exists.
_NODE_CACHE: dict[tuple[int, str], tuple[ast.AST, Any]] = {}
_NODE_CACHE_SIZE = 20000


def node_cache_get(node: ast.AST, what: str) -> Any:
    """The value stored for (`node`, `what`), or None."""
    hit = _NODE_CACHE.get((id(node), what))
    return hit[1] if hit is not None and hit[0] is node else None


def node_cache_put(node: ast.AST, what: str, value: Any) -> None:
    """Store `value` for (`node`, `what`); the whole cache is dropped when full."""
    if len(_NODE_CACHE) >= _NODE_CACHE_SIZE:
        _NODE_CACHE.clear()
    _NODE_CACHE[(id(node), what)] = (node, value)


# A small LRU of results, invalidated when a sibling file that was consulted changed on disk.
_RESULT_CACHE_SIZE = 32
_RESULT_CACHE: BoundedCache[tuple[Any, ...], tuple[list[ModuleInfo], dict[str, tuple[int, int]]]]
_RESULT_CACHE = BoundedCache(_RESULT_CACHE_SIZE)
_CONSULTED: ContextVar[dict[str, tuple[int, int]] | None] = ContextVar("consulted", default=None)


@contextmanager
def noting_consulted() -> Iterator[dict[str, tuple[int, int]]]:
    """Within: the stamps of the files (and folders) discovery looks at, by path."""
    consulted: dict[str, tuple[int, int]] = {}
    token = _CONSULTED.set(consulted)
    try:
        yield consulted
    finally:
        _CONSULTED.reset(token)


def note_stamp(path: str, st: os.stat_result) -> None:
    """Remember that the result being computed depends on `path` as `st` describes it."""
    consulted = _CONSULTED.get()
    if consulted is not None:
        consulted[path] = (st.st_mtime_ns, st.st_size)


def cached_result(key: tuple[Any, ...]) -> list[ModuleInfo] | None:
    """Copies of the stored result for `key`, unless a file it consulted changed since."""
    cached = _RESULT_CACHE.get(key)
    if cached is not None and _siblings_unchanged(cached[1]):
        return [copy.copy(m) for m in cached[0]]
    return None


def store_result(
    key: tuple[Any, ...], infos: list[ModuleInfo], consulted: dict[str, tuple[int, int]],
) -> None:
    """Keep copies of `infos` for `key`, with the stamps they depend on."""
    _RESULT_CACHE.put(key, ([copy.copy(m) for m in infos], consulted))


def _siblings_unchanged(consulted: dict[str, tuple[int, int]]) -> bool:
    for sibling, stamp in consulted.items():
        try:
            st = os.stat(sibling)
        except OSError:
            return False
        if (st.st_mtime_ns, st.st_size) != stamp:
            return False
    return True


_TEXT_CACHE: dict[tuple[str, int, int], str] = {}


def read_stamped(path: str) -> str | None:
    """A sibling's text (cached by mtime and size), noting it for the result cache."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    note_stamp(path, st)
    key = (path, st.st_mtime_ns, st.st_size)
    text = _TEXT_CACHE.get(key)
    if text is None:
        try:
            text = read_text(path, errors="replace")  # bounded, regular files only
        except OSError:
            return None
        if len(_TEXT_CACHE) > 256:
            _TEXT_CACHE.clear()
        _TEXT_CACHE[key] = text
    return text

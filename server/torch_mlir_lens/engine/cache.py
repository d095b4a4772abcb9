"""Result cache keyed by content hashes (never timestamps), invalidated per file: an entry
goes when its own file changes, a file beside it, or any file its answer read (what the
worker's provenance names: a module imported from another folder)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens.system.bounded_cache import BoundedCache


def content_key(parts: dict[str, Any]) -> str:
    """A stable sha256 of a JSON-able dict (key order does not matter)."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _Entry:
    path: str
    value: Any
    depends: frozenset[str] = frozenset()  # the other files its answer read


class ResultCache:
    """A bounded LRU map from content key to a value, remembering which file each came from."""

    def __init__(self, max_entries: int = 256) -> None:
        self._entries: BoundedCache[str, _Entry] = BoundedCache(max_entries)

    @property
    def hits(self) -> int:
        return self._entries.hits

    @property
    def misses(self) -> int:
        return self._entries.misses

    def get(self, key: str) -> Any | None:
        entry = self._entries.get(key)
        return entry.value if entry is not None else None

    def put(self, key: str, path: str, value: Any, depends: Iterable[str] = ()) -> None:
        self._entries.put(key, _Entry(path, value,
                                      frozenset(os.path.realpath(d) for d in depends)))

    def invalidate(self, path: str) -> set[str]:
        """Drop results of `path`, of the files next to it (they may import it) and of every
        file whose answer read it. Returns the files whose results were dropped."""
        path = os.path.abspath(path)
        folder = os.path.dirname(path)
        real = os.path.realpath(path)
        return self._drop(lambda entry: entry.path == path
                          or os.path.dirname(entry.path) == folder or real in entry.depends)

    def drop_files(self, paths: set[str]) -> set[str]:
        """Drop the results of these files (absolute paths); the files dropped."""
        return self._drop(lambda entry: entry.path in paths)

    def drop_if(self, predicate: Any) -> int:
        """Drop every entry whose value satisfies predicate(value)."""
        return len(self._entries.drop_if(lambda _key, entry: predicate(entry.value)))

    def _drop(self, doomed: Callable[[_Entry], bool]) -> set[str]:
        files = {entry.path for _key, entry in self._entries.items() if doomed(entry)}
        self._entries.drop_if(lambda _key, entry: doomed(entry))
        return files

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

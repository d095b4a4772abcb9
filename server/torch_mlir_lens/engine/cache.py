"""Result cache keyed by content hashes (never timestamps), invalidated per file: an entry
goes when its own file changes, a file beside it, or any file its answer read (what the
worker's provenance names: a module imported from another folder)."""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


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
        self.max_entries = max_entries
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry.value

    def put(self, key: str, path: str, value: Any, depends: Iterable[str] = ()) -> None:
        self._entries[key] = _Entry(path, value, frozenset(os.path.realpath(d) for d in depends))
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def invalidate(self, path: str) -> set[str]:
        """Drop results of `path`, of the files next to it (they may import it) and of every
        file whose answer read it. Returns the files whose results were dropped."""
        path = os.path.abspath(path)
        folder = os.path.dirname(path)
        real = os.path.realpath(path)
        doomed = [
            key for key, entry in self._entries.items()
            if entry.path == path or os.path.dirname(entry.path) == folder
            or real in entry.depends
        ]
        files = {self._entries[key].path for key in doomed}
        for key in doomed:
            del self._entries[key]
        return files

    def drop_files(self, paths: set[str]) -> set[str]:
        """Drop the results of these files (absolute paths); the files dropped."""
        doomed = [key for key, entry in self._entries.items() if entry.path in paths]
        files = {self._entries[key].path for key in doomed}
        for key in doomed:
            del self._entries[key]
        return files

    def drop_if(self, predicate: Any) -> int:
        """Drop every entry whose value satisfies predicate(value)."""
        doomed = [key for key, entry in self._entries.items() if predicate(entry.value)]
        for key in doomed:
            del self._entries[key]
        return len(doomed)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

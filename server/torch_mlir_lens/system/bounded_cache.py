"""The one bounded cache of the product: a map keeping its most recently used entries.

The engine keeps its answers in one, the worker its exported programs, loaded files, traced
blocks and proofs' verdicts: every cache that must not grow without end is this class, so
its rule (least recently used goes first; a hit refreshes) is written once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """At most `max_entries` entries; putting one more drops the least recently used (given
    to `on_evict`, when a caller must release it: an MLIR context, a module's weights)."""

    def __init__(self, max_entries: int, on_evict: Callable[[K, V], None] | None = None) -> None:
        self.max_entries = max_entries
        self._on_evict = on_evict
        self._entries: OrderedDict[K, V] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        """The entry of `key` (now the most recently used), or None."""
        if key not in self._entries:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return self._entries[key]

    def peek(self, key: K) -> V | None:
        """The entry of `key` without touching its place or the counts."""
        return self._entries.get(key)

    def put(self, key: K, value: V) -> None:
        """Keep `value` as the most recently used; drop the least recent beyond the bound."""
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            old_key, old = self._entries.popitem(last=False)
            if self._on_evict is not None:
                self._on_evict(old_key, old)

    def pop(self, key: K) -> V | None:
        """Forget `key`; its entry, or None."""
        return self._entries.pop(key, None)

    def drop_if(self, predicate: Callable[[K, V], bool]) -> list[K]:
        """Forget every entry `predicate` holds for; their keys."""
        doomed = [k for k, v in self._entries.items() if predicate(k, v)]
        for key in doomed:
            del self._entries[key]
        return doomed

    def clear(self) -> None:
        self._entries.clear()

    def values(self) -> list[V]:
        return list(self._entries.values())

    def items(self) -> list[tuple[K, V]]:
        return list(self._entries.items())

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._entries))

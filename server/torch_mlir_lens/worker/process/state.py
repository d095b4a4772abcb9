"""What the worker keeps from one job to the next, with one owner.

A warm worker keeps a great deal between jobs: exported programs, the files it loaded and
their digests, the import graph, traced blocks, the parents' exports, the inputs a parent
recorded, the proofs' verdicts, IREE's compiled modules. Each is a small part — a dataclass
the module that uses it defines, holding its bounded caches (`system/bounded_cache.py`) and
flags — asked for here with `WORKER.part(Kind)`: there is no module-level mutable state and
no `global` in the worker (`tests/test_worker_layers.py`), a reader finds every part in one
place (`parts()`), and a fresh worker's state is one `reset()` away.
"""

from __future__ import annotations

from typing import Any, TypeVar

from torch_mlir_lens.system.bounded_cache import BoundedCache

T = TypeVar("T")


class WorkerState:
    """The worker's parts, by kind, made on first use."""

    def __init__(self) -> None:
        self._parts: dict[type, Any] = {}
        self._caches: dict[str, BoundedCache[Any, Any]] = {}

    def part(self, kind: type[T]) -> T:
        """The part of this kind (made with `kind()` the first time it is asked for)."""
        found = self._parts.get(kind)
        if found is None:
            found = self._parts[kind] = kind()
        return found  # type: ignore[no-any-return]

    def cache(self, name: str, max_entries: int) -> BoundedCache[Any, Any]:
        """The bounded cache called `name` (its module's and its own name), made the first
        time: a part that is only a cache needs no class of its own."""
        found = self._caches.get(name)
        if found is None:
            found = self._caches[name] = BoundedCache(max_entries)
        return found

    def reset(self, kind: type | None = None) -> None:
        """Forget one part (`kind`), or every part and cache: the state of a fresh worker."""
        if kind is None:
            self._parts.clear()
            self._caches.clear()
        else:
            self._parts.pop(kind, None)

    def parts(self) -> list[str]:
        """The parts and caches made so far, by their modules and names."""
        return sorted([f"{k.__module__}.{k.__qualname__}" for k in self._parts]
                      + list(self._caches))


WORKER = WorkerState()

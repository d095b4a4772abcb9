"""The answers the engine keeps: in memory, on disk, and what each of them read.

Three stores with one owner: the in-memory cache (`cache.py`, by content key), the persistent
cache (`persistent_results.py`, lowerings and proofs of rewrites, across processes) and what
every kept answer read (`reads.py`: files with digests, module names absent from the user's
folders). A worker's reply carries its provenance; here it is read once (callers that shared a
job share its reply, so nobody takes it from the others), the reply is kept only when it is
stable (no file it read changed while it ran), and a change to any file, whatever its folder,
names every file whose answers it makes stale.
"""

from __future__ import annotations

import os
from typing import Any

from torch_mlir_lens.engine.cache import ResultCache
from torch_mlir_lens.engine.persistent_results import PersistentResults
from torch_mlir_lens.engine.reads import Reads
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.system.disk_cache import DiskCacheStats

# Failures are remembered like results (they depend on the text and the settings, not on luck:
# a hover over a hanging module must not hang the worker again until the text changes), but
# those that say nothing about the module: a cancelled job.
TRANSIENT_ERRORS = {ErrorKind.CANCELLED}


class Answers:
    """The engine's kept answers (`persistent`: the disk tier, when there is one)."""

    def __init__(self, max_entries: int, persistent: PersistentResults | None) -> None:
        self.memory = ResultCache(max_entries)
        self.persistent = persistent
        self._reads = Reads()

    # -- reading ------------------------------------------------------------------------

    def recalled(self, key: str) -> Any | None:
        """The answer kept in memory under `key`: a reply, or a failure (raised)."""
        value = self.memory.get(key)
        if isinstance(value, LensError):
            raise LensError(value.kind, value.message, file=value.file, line=value.line,
                            related=value.related)
        return value

    async def stored(self, key: str, path: str | None) -> dict[str, Any] | None:
        """The answer kept on disk under `key`, if it still holds (then kept in memory too)."""
        if self.persistent is None:
            return None
        found = await self.persistent.get(key)
        if found is None:
            return None
        if path:
            self._reads.note(key, path, found.files, found.absent)
            self.memory.put(key, path, found.reply, found.files)
        return found.reply

    # -- keeping ------------------------------------------------------------------------

    def keep(self, key: str, path: str | None, result: dict[str, Any], *, memory: bool,
             disk: bool) -> dict[str, Any]:
        """Keep a worker's reply (in memory and/or on disk, when it is stable); the reply
        without its provenance."""
        provenance = result.get("provenance")
        reply = {k: v for k, v in result.items() if k != "provenance"}
        if path:
            self._reads.note(key, path, _digests_read(provenance), _absent(provenance))
        if isinstance(provenance, dict) and provenance.get("unstable"):
            # A file the job read changed while it ran: the answer may mix both versions.
            # Answered, never kept (the next request lowers again).
            return reply
        if memory and path:
            self.memory.put(key, path, reply, _files_read(provenance))
        if disk and self.persistent is not None:
            self.persistent.put(key, reply, provenance)
        return reply

    def keep_failure(self, key: str, path: str | None, err: LensError, *,
                     memory: bool) -> None:
        """Keep a failure that says something about the module (not a transient one, not a
        load error: that may come from code outside the module's fingerprint)."""
        if path:
            self._reads.note(key, path, err.depends)
        if memory and path and err.kind not in TRANSIENT_ERRORS and (
                err.kind != ErrorKind.LOAD_ERROR):
            self.memory.put(key, path, err, err.depends)

    # -- forgetting ---------------------------------------------------------------------

    def invalidate(self, path: str) -> set[str]:
        """Forget the answers of a file, of its neighbours (which may import it) and of every
        file whose answer read it or looked in vain for a module it offers; those files."""
        path = os.path.abspath(path)
        dropped = self.memory.invalidate(path)
        readers = self._reads.stale_after(path)
        dropped |= self.memory.drop_files(readers)
        return (dropped | readers) - {path}

    def files_read(self) -> dict[str, set[str]]:
        """The files (real paths) the kept answers read, with the digests of what they read
        ("" where a failure did not say)."""
        return self._reads.files()

    async def flush(self) -> None:
        """Wait until the persistent cache has written what it was given."""
        if self.persistent is not None:
            await self.persistent.flush()

    @property
    def persistent_stats(self) -> DiskCacheStats | None:
        """The persistent cache's counters in this process (None: no persistent cache)."""
        return self.persistent.stats if self.persistent is not None else None


def _absent(provenance: Any) -> dict[str, list[str]]:
    """The names a worker's provenance says were absent from the user's folders searched."""
    absent = provenance.get("absent") if isinstance(provenance, dict) else None
    if not isinstance(absent, dict):
        return {}
    return {f: [n for n in names if isinstance(n, str)] for f, names in absent.items()
            if isinstance(f, str) and isinstance(names, list)}


def _digests_read(provenance: Any) -> dict[str, str]:
    """file → the digest a worker's provenance says the answer read."""
    files = provenance.get("files") if isinstance(provenance, dict) else None
    if not isinstance(files, dict):
        return {}
    return {f: d for f, d in files.items() if isinstance(f, str) and isinstance(d, str)}


def _files_read(provenance: Any) -> list[str]:
    """The user files a worker's provenance says the answer read (absolute paths)."""
    return [os.path.abspath(f) for f in _digests_read(provenance)]

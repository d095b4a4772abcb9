"""The engine's side of the persistent cache: lowering replies by job and environment.

Reads and writes run in a thread, so a multi-megabyte entry never stalls the event loop (a
language server keeps answering meanwhile); writes happen after the caller has its answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
from typing import Any

from torch_mlir_lens import defaults
from torch_mlir_lens.protocol.schemas import stored_reply_ok
from torch_mlir_lens.system.disk_cache import DiskCache, DiskCacheStats, Stored
from torch_mlir_lens.system.environment import environment_key

log = logging.getLogger(__name__)

CACHE_DIR_ENV = defaults.CACHE_DIR_ENV


def default_cache_dir() -> str | None:
    """The persistent cache's folder: `$TORCH_MLIR_LENS_CACHE_DIR` when set (empty: none),
    else the platform's user cache folder (e.g. `~/.cache/torch-mlir-lens` on Linux)."""
    if CACHE_DIR_ENV in os.environ:
        return os.environ[CACHE_DIR_ENV] or None
    import platformdirs  # only when a cache is used: it is not on the start-up path

    return str(platformdirs.user_cache_dir("torch-mlir-lens", appauthor=False))


class PersistentResults:
    """Lowering replies in a `DiskCache` folder, for the worker interpreter `python`."""

    def __init__(self, folder: str, max_mb: int, python: str) -> None:
        self._disk = DiskCache(folder, max_mb * 1024 * 1024, purpose="replies",
                               validate=stored_reply_ok)
        self._python = python
        self._environment: str | None = None
        self._known = False  # whether the environment key was computed (it may be None)
        self._writes: set[asyncio.Future[None]] = set()

    @property
    def stats(self) -> DiskCacheStats:
        return self._disk.stats

    def _key(self, job_key: str) -> str | None:
        if not self._known:
            self._environment = environment_key(self._python)
            self._known = True
            if self._environment is None:
                log.warning("persistent cache off: cannot tell the versions of %s", self._python)
        if self._environment is None:
            return None
        return hashlib.sha256(f"{self._environment}:{job_key}".encode()).hexdigest()

    async def get(self, job_key: str) -> Stored | None:
        """The stored reply of a job, if it still holds, with what it depends on."""
        return await asyncio.to_thread(self._get, job_key)

    def _get(self, job_key: str) -> Stored | None:
        key = self._key(job_key)
        return self._disk.lookup(key) if key is not None else None

    def put(self, job_key: str, reply: dict[str, Any], provenance: Any) -> None:
        """Store a reply in the background (what it depends on: the worker's provenance)."""
        if not isinstance(provenance, dict):
            return
        write = asyncio.ensure_future(asyncio.to_thread(self._put, job_key, reply, provenance))
        self._writes.add(write)
        write.add_done_callback(self._writes.discard)

    def _put(self, job_key: str, reply: dict[str, Any], provenance: dict[str, Any]) -> None:
        key = self._key(job_key)
        if key is not None:
            self._disk.put(key, reply, provenance)

    async def flush(self) -> None:
        """Wait for the writes under way (before a process exits, and in tests)."""
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

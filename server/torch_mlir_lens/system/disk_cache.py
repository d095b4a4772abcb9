"""The persistent cache's storage: entries kept on disk across processes and days.

An entry is a JSON object (the engine's: a lowering's reply, its IR per target, line map,
diagnostics and stats; the worker's: a traced block's function) stored under a key that covers
the job and its environment (`environment.py`), plus what it depends on (for a reply, what
the worker said, `worker/loading/provenance.py`): the other files the code executed, with
their content hashes, and the installed libraries, with their versions. A lookup hashes
those files and reads those versions again: the entry is used only when all still match, so
an answer is confirmed, not recomputed, and never served stale.

Safe to share: two editor windows and a CLI may read and write one folder at once. Entries
are written to a temporary file and renamed into place (readers see a whole entry or none);
an entry that cannot be read or parsed (truncated, corrupt, another format) is a miss and is
removed. Entries are data (compressed JSON), never code. The folder is bounded: when a
writer finds it over its size, the least recently used entries go (a hit refreshes an
entry's time).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch_mlir_lens.system.atomic_write import write_atomically

log = logging.getLogger(__name__)

FORMAT = 1  # bump when an entry's layout changes: older entries are then misses
_SUFFIX = ".json.z"
_EVICT_TO = 0.8  # an eviction pass leaves the folder at this share of its bound


@dataclass
class DiskCacheStats:
    """What this process's cache did: hits, misses (stale ones among them), writes."""

    hits: int = 0
    misses: int = 0
    stale: int = 0  # entries found but no longer true (a file or a library changed)
    writes: int = 0


def _version_of(dist: str) -> str | None:
    import importlib.metadata  # not on the language server's start-up path

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes (what an entry records of a file it depends on); None when
    it cannot be read."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


class DiskCache:
    """Entries in `root/v{FORMAT}/`, at most `max_bytes` in all (approximately: each writer
    enforces it when its own writes push the folder over)."""

    def __init__(self, root: str | os.PathLike[str], max_bytes: int, *,
                 version_of: Callable[[str], str | None] = _version_of) -> None:
        self.folder = Path(root) / f"v{FORMAT}"
        self.max_bytes = max_bytes
        self.stats = DiskCacheStats()
        self._version_of = version_of
        self._size: int | None = None  # the folder's size, as last counted plus our writes

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}{_SUFFIX}"

    # -- reading ------------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        """The reply stored under `key`, if every file and library it depends on is unchanged."""
        path = self._path(key)
        try:
            blob = path.read_bytes()
        except OSError:
            self.stats.misses += 1
            return None
        entry = _decode(blob, key)
        if entry is None:
            log.info("persistent cache: dropping unreadable entry %s", path.name)
            self._remove(path)
            self.stats.misses += 1
            return None
        if not self._still_true(entry):
            self.stats.misses += 1
            self.stats.stale += 1
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: evicted last
        self.stats.hits += 1
        reply: dict[str, Any] = entry["reply"]
        return reply

    def _still_true(self, entry: dict[str, Any]) -> bool:
        files, libraries = entry["files"], entry["libraries"]
        return (all(file_digest(path) == digest for path, digest in files.items())
                and all(self._version_of(dist) == version
                        for dist, version in libraries.items()))

    # -- writing ------------------------------------------------------------------------

    def put(self, key: str, reply: dict[str, Any], provenance: dict[str, Any]) -> None:
        """Store a reply and what it depends on; never raises (a cache is a nicety)."""
        files = provenance.get("files")
        libraries = provenance.get("libraries")
        if not isinstance(files, dict) or not isinstance(libraries, dict):
            return  # a worker that cannot say what the answer depends on: not kept
        entry = {"format": FORMAT, "key": key, "written": time.time(), "files": files,
                 "libraries": libraries, "reply": reply}
        path = self._path(key)
        try:
            blob = zlib.compress(json.dumps(entry, separators=(",", ":")).encode(), 6)
            write_atomically(path, blob)
        except (OSError, TypeError, ValueError) as exc:
            log.info("persistent cache: could not write an entry: %s", exc)
            return
        self.stats.writes += 1
        if self._size is not None:
            self._size += len(blob)
        if self.size() > self.max_bytes:
            self.evict()

    # -- size ---------------------------------------------------------------------------

    def _entries(self) -> list[tuple[float, int, Path]]:
        """(last use, size, path) of every entry, oldest first."""
        out = []
        with contextlib.suppress(OSError):
            for path in self.folder.glob(f"*/*{_SUFFIX}"):
                with contextlib.suppress(OSError):
                    st = path.stat()
                    out.append((st.st_mtime, st.st_size, path))
        return sorted(out)

    def size(self) -> int:
        """The folder's size in bytes (counted once, then kept up to date by our writes)."""
        if self._size is None:
            self._size = sum(size for _, size, _ in self._entries())
        return self._size

    def evict(self) -> int:
        """Remove the least recently used entries until the folder is under its bound."""
        entries = self._entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, path in entries:
            if total <= self.max_bytes * _EVICT_TO:
                break
            if self._remove(path):
                total -= size
                removed += 1
        self._size = total
        return removed

    def _remove(self, path: Path) -> bool:
        try:
            path.unlink()
            return True
        except OSError:  # another process removed it first
            return False


def _decode(blob: bytes, key: str) -> dict[str, Any] | None:
    """The entry in `blob`, or None unless it is whole, of this format and of this key."""
    try:
        entry = json.loads(zlib.decompress(blob))
    except (zlib.error, ValueError, UnicodeDecodeError):
        return None
    if not (isinstance(entry, dict) and entry.get("format") == FORMAT
            and entry.get("key") == key and isinstance(entry.get("reply"), dict)
            and isinstance(entry.get("files"), dict)
            and isinstance(entry.get("libraries"), dict)):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in entry["files"].items()):
        return None
    return entry

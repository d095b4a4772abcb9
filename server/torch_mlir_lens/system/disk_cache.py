"""The persistent cache's storage: entries kept on disk across processes and days.

An entry is a JSON object (the engine's: a lowering's reply, its IR per target, line map,
diagnostics and stats; the worker's: a traced block's function) stored under a key that covers
the job and its environment (`environment.py`), plus what it depends on (for a reply, what
the worker said, `worker/loading/provenance.py`): the other files the code executed, with
their content hashes, the installed libraries, with their versions, and the module names that
were absent from the user's folders searched before theirs. A lookup hashes those files, reads
those versions and looks for those names again: the entry is used only when all still hold
(no file now shadows an import), so an answer is confirmed, not recomputed, and never served
stale.

Believed only when it is ours: a cache folder may sit in a checkout a pull request writes to,
so each entry carries an HMAC under the user's key (`cache_key.py`) over its name and bytes,
and its reply must fit the schema its owner gives (`validate`). A forged, copied, swapped,
mistyped, truncated or foreign entry is a miss and is removed, so the next answer replaces it.
Entries are data (compressed JSON), never code, read bounded and never through a link
(`reading.py`).

Safe to share: two editor windows and a CLI may read and write one folder at once. Entries
are written to a temporary file and renamed into place (readers see a whole entry or none).
The folder is bounded: when a writer finds it over its size, the least recently used entries
go (a hit refreshes an entry's time). Every folder from the cache's own (`top`) down to an
entry must be a real folder, not a link: a link planted anywhere below it (`blocks` pointing
at another cache) makes the cache keep nothing, never read, write or remove through it.
Eviction and clean-up remove only regular files named as this module names them, and sweep the
temporaries of writers that were killed mid-write (or whose names cannot be believed: older than
`_STALE_TEMPORARY_S`, or dated in the future); those count towards the bound until then.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import stat
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from torch_mlir_lens.system import cache_key
from torch_mlir_lens.system.atomic_write import sweep_stale_temporaries, write_atomically
from torch_mlir_lens.system.reading import CACHE_ENTRY, digest_of, read_bytes

log = logging.getLogger(__name__)

FORMAT = 2  # bump when an entry's layout changes: older entries are then misses
_MAGIC = b"torch-mlir-lens cache 2\n"
_SUFFIX = ".json.z"
_ENTRY_NAME = re.compile(r"^[0-9a-f]{64}\.json\.z$")
_TEMPORARY_NAME = re.compile(r"^\.[0-9a-f]{64}\.json\.z\.\d+\.\d+\.tmp$")
_EVICT_TO = 0.8  # an eviction pass leaves the folder at this share of its bound
# An entry is written in milliseconds: a temporary this old is a killed writer's, or planted.
_STALE_TEMPORARY_S = 600.0

Validator = Callable[[Any], bool]


class Stored(NamedTuple):
    """A reply read back, with the files it read and the names it found absent."""

    reply: dict[str, Any]
    files: dict[str, str]  # path → the digest of what it read
    absent: dict[str, list[str]]


@dataclass
class DiskCacheStats:
    """What this process's cache did: hits, misses (stale ones among them), writes."""

    hits: int = 0
    misses: int = 0
    stale: int = 0  # entries found but no longer true (a file or a library changed)
    writes: int = 0
    rejected: int = 0  # entries dropped: not ours (tag), not of this key, or not the schema


def _version_of(dist: str) -> str | None:
    import importlib.metadata  # not on the language server's start-up path

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes (what an entry records of a file it depends on); None when
    it cannot be read."""
    return digest_of(path)


def _no_link_below(top: Path, folder: Path, *, missing_ok: bool) -> bool:
    """Whether `top` and every folder from it down to `folder` is a real folder (a missing
    one is fine when `missing_ok`: it will be made, as a folder)."""
    try:
        parts = folder.relative_to(top).parts
    except ValueError:
        return False
    here = top
    for name in ("", *parts):
        here = here / name if name else here
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            return missing_ok
        except OSError:
            return False
        if not stat.S_ISDIR(mode):
            return False
    return True


class DiskCache:
    """Entries in `root/v{FORMAT}/`, at most `max_bytes` in all (approximately: each writer
    enforces it when its own writes push the folder over).

    `purpose` names what the entries are ("replies", "blocks"): an entry of one kind does not
    verify as another. `validate(reply)` says whether a stored reply has the owner's schema.
    `secret`: the key (default: the user's, `cache_key.cache_secret`); without one the cache
    keeps nothing. `top`: the cache's own folder, when `root` is a subfolder of it (nothing
    from `top` down may be a link; links above it are the user's own business)."""

    def __init__(self, root: str | os.PathLike[str], max_bytes: int, *,
                 purpose: str = "replies", validate: Validator | None = None,
                 secret: bytes | None = None, top: str | os.PathLike[str] | None = None,
                 version_of: Callable[[str], str | None] = _version_of) -> None:
        self.folder = Path(root) / f"v{FORMAT}"
        self.top = Path(top) if top is not None else Path(root)
        self.max_bytes = max_bytes
        self.stats = DiskCacheStats()
        self.purpose = purpose
        self._validate = validate
        self._secret = secret if secret is not None else cache_key.cache_secret()
        self._version_of = version_of
        self._size: int | None = None  # the folder's size, as last counted plus our writes

    @property
    def enabled(self) -> bool:
        """Whether entries are kept: there is a key, and no folder from the cache's own down
        to the entries' is a link."""
        return self._secret is not None and _no_link_below(self.top, self.folder,
                                                            missing_ok=True)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}{_SUFFIX}"

    # -- reading ------------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        """The reply stored under `key`, if it is ours and every file and library it depends
        on is unchanged."""
        found = self.lookup(key)
        return found.reply if found is not None else None

    def lookup(self, key: str) -> Stored | None:
        """The reply stored under `key` with what it depends on, as `get` finds it."""
        path = self._path(key)
        blob = self._read(path) if self.enabled else None
        if blob is None:
            self.stats.misses += 1
            return None
        entry = self._open(blob, key)
        if entry is None:
            log.info("persistent cache: dropping an entry that is not ours or not whole: %s",
                     path.name)
            self._remove(path)
            self.stats.rejected += 1
            self.stats.misses += 1
            return None
        if not self._still_true(entry):
            self.stats.misses += 1
            self.stats.stale += 1
            return None
        with contextlib.suppress(OSError):
            os.utime(path, follow_symlinks=False)  # recently used: evicted last
        self.stats.hits += 1
        return Stored(entry["reply"], dict(entry["files"]), dict(entry.get("absent") or {}))

    def _read(self, path: Path) -> bytes | None:
        if not _no_link_below(self.top, path.parent, missing_ok=False):
            return None
        try:
            return read_bytes(path, CACHE_ENTRY)  # regular files, bounded, never via a link
        except OSError:
            return None

    def _open(self, blob: bytes, key: str) -> dict[str, Any] | None:
        """The entry in `blob` when it is ours, whole, of this format and key and schema."""
        assert self._secret is not None
        if not blob.startswith(_MAGIC):
            return None
        payload = cache_key.unseal(self._secret, self.purpose, key, blob[len(_MAGIC):])
        if payload is None:
            return None
        entry = _decode(payload, key)
        if entry is None or (self._validate is not None and not _safely(self._validate,
                                                                        entry["reply"])):
            return None
        return entry

    def _still_true(self, entry: dict[str, Any]) -> bool:
        files, libraries = entry["files"], entry["libraries"]
        return (all(file_digest(path) == digest for path, digest in files.items())
                and all(self._version_of(dist) == version
                        for dist, version in libraries.items())
                and not shadowed(entry.get("absent") or {}))

    # -- writing ------------------------------------------------------------------------

    def put(self, key: str, reply: dict[str, Any], provenance: dict[str, Any]) -> None:
        """Store a reply and what it depends on; never raises (a cache is a nicety)."""
        files = provenance.get("files")
        libraries = provenance.get("libraries")
        if not isinstance(files, dict) or not isinstance(libraries, dict):
            return  # a worker that cannot say what the answer depends on: not kept
        if not self.enabled or self._secret is None:
            return
        absent = provenance.get("absent") or {}
        entry = {"format": FORMAT, "key": key, "written": time.time(), "files": files,
                 "libraries": libraries, "absent": absent, "reply": reply}
        path = self._path(key)
        if not _no_link_below(self.top, path.parent, missing_ok=True):
            log.info("persistent cache: %s is not a folder of ours: not written",
                     path.parent)
            return
        try:
            payload = zlib.compress(json.dumps(entry, separators=(",", ":")).encode(), 6)
            blob = _MAGIC + cache_key.seal(self._secret, self.purpose, key, payload)
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

    def _files(self) -> Iterator[os.DirEntry[str]]:
        """The regular files in the entry folders that are not links (entries and
        temporaries alike)."""
        if not _no_link_below(self.top, self.folder, missing_ok=False):
            return
        with contextlib.suppress(OSError), os.scandir(self.folder) as subfolders:
            for sub in list(subfolders):
                if not sub.is_dir(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError), os.scandir(sub.path) as files:
                    for entry in list(files):
                        if entry.is_file(follow_symlinks=False):
                            yield entry

    def _entries(self) -> list[tuple[float, int, Path]]:
        """(last use, size, path) of every entry, oldest first; stale temporaries of killed
        writers are removed on the way, live ones counted as entries that cannot go yet."""
        out = []
        swept: set[str] = set()
        for file in self._files():
            with contextlib.suppress(OSError):
                if _ENTRY_NAME.match(file.name):
                    st = file.stat(follow_symlinks=False)
                    out.append((st.st_mtime, st.st_size, Path(file.path)))
                elif _TEMPORARY_NAME.match(file.name):
                    target = os.path.join(os.path.dirname(file.path),
                                          file.name[1:].split(_SUFFIX)[0] + _SUFFIX)
                    if target not in swept:
                        swept.add(target)
                        sweep_stale_temporaries(target, any_writer_age_s=_STALE_TEMPORARY_S)
                    if os.path.lexists(file.path):  # a writer still at it
                        out.append((float("inf"), file.stat(follow_symlinks=False).st_size,
                                    Path(file.path)))
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
        for used, size, path in entries:
            if total <= self.max_bytes * _EVICT_TO or used == float("inf"):
                break
            if self._remove(path):
                total -= size
                removed += 1
        self._size = total
        return removed

    def _remove(self, path: Path) -> bool:
        """Remove one of our entries: a regular file of our name in a folder of ours. The
        folder is opened once, never through a link, and the entry removed relative to it:
        a folder swapped for a link meanwhile cannot take the removal elsewhere."""
        if not (_ENTRY_NAME.match(path.name)
                and _no_link_below(self.top, path.parent, missing_ok=False)):
            return False
        try:
            fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.stat(path.name, dir_fd=fd, follow_symlinks=False).st_mode):
                return False
            os.unlink(path.name, dir_fd=fd)
            return True
        except OSError:  # another process removed it first
            return False
        finally:
            os.close(fd)


def _safely(validate: Validator, reply: Any) -> bool:
    try:
        return bool(validate(reply))
    except Exception:  # a validator that trips on odd data: the data is not valid
        return False


def _decode(payload: bytes, key: str) -> dict[str, Any] | None:
    """The entry in `payload`, or None unless it is whole, of this format and of this key."""
    try:
        entry = json.loads(zlib.decompress(payload))
    except (zlib.error, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not (isinstance(entry, dict) and entry.get("format") == FORMAT
            and entry.get("key") == key and isinstance(entry.get("reply"), dict)
            and isinstance(entry.get("files"), dict)
            and isinstance(entry.get("libraries"), dict)):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in entry["files"].items()):
        return None
    if not all(isinstance(k, str) and isinstance(v, str | None)
               for k, v in entry["libraries"].items()):
        return None
    absent = entry.get("absent", {})
    if not (isinstance(absent, dict) and all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(n, str) for n in v)
            for k, v in absent.items())):
        return None
    return entry


_IMPORTABLE = (".py", ".pyc", ".so", ".pyd", ".pyw")


def shadowed(absent: dict[str, list[str]]) -> bool:
    """Whether a folder now offers a module of a name that was absent from it when the answer
    was made (`x.py`, `x/__init__.py`, an extension module): an import would find it first."""
    for folder, names in absent.items():
        wanted = set(names)
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    stem = entry.name.split(".", 1)[0]
                    if stem not in wanted:
                        continue
                    if entry.name.endswith(_IMPORTABLE) or (
                            entry.name == stem and os.path.isfile(
                                os.path.join(entry.path, "__init__.py"))):
                        return True
        except OSError:
            continue  # a folder gone offers nothing
    return False

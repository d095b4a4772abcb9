"""The one reader of bytes the product did not write itself: bounded, regular files only.

A path can name anything: `/dev/zero` (endless), `/dev/stdin` (the server's own LSP channel),
a FIFO (blocks the reader until someone writes), a 50 GB log, a symlink a repository planted
in a cache folder. Every file the product reads that a user, a client or a repository can name
or plant — sources, notebooks, pyproject.toml, baselines, reports to merge, cache entries,
traced blocks, the cache key, inputs files — is read here (`tests/system/test_one_reader.py`
fails on an `open(` anywhere else). It opens without blocking (a FIFO's open would wait for a
writer), refuses what `fstat` says is not a regular file, and reads at most the limit of the
file's kind, so nothing can freeze a process or fill its memory. Where the product owns the
folder (its caches), a symbolic link is refused too (`Kind.follow_links`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from torch_mlir_lens.defaults import MAX_NOTEBOOK_BYTES, MAX_SOURCE_BYTES


@dataclass(frozen=True)
class Kind:
    """What a file is, for its limit and its messages."""

    name: str  # as a message names it: "baseline", "cache entry", ...
    limit: int  # bytes
    follow_links: bool = True  # False: a symlink is refused (folders the product owns)


SOURCE = Kind("source file", MAX_SOURCE_BYTES)
NOTEBOOK = Kind("notebook", MAX_NOTEBOOK_BYTES)
# A pyproject.toml is a few KB; read (as data) even in an untrusted workspace.
PROJECT_FILE = Kind("project file", 1_000_000)
BASELINE = Kind("baseline", 32_000_000)
REPORT = Kind("report", 256_000_000)  # a shard's JSON or SARIF report, for `merge`
# An entry is compressed JSON: one module's IR at each target with weights elided (a big
# model's stitched IR compresses to a few MB). Read whole before its tag is checked: bounded
# low, so a planted sparse file is refused by its size, unread.
CACHE_ENTRY = Kind("cache entry", 64_000_000, follow_links=False)
CACHE_KEY = Kind("cache key", 4096, follow_links=False)
GENERATED_CODE = Kind("generated-code cache", 64_000_000, follow_links=False)
INPUTS_FILE = Kind("inputs file", 4_000_000_000)  # saved example tensors (torch.load)
SYSTEM_FILE = Kind("system file", 1_000_000)  # /proc entries, this package's own files
IR_DUMP = Kind("IR dump", 2_000_000_000)  # the IR after a pass, as torch-mlir printed it
# An ONNX model is one protobuf message, which protobuf cannot parse past 2 GiB (bigger models
# keep their weights in external data files, which are mapped, never read whole).
ONNX_MODEL = Kind("model (.onnx)", 2**31 - 1)
ONNX_TENSOR = Kind("ONNX test tensor", 2**31 - 1)  # test_data_set_*/input_*.pb beside a model
ONNX_DATA = Kind("ONNX external data file", 2**40)  # mapped (`map_region`), never read whole


class UnreadableFile(OSError):
    """A file refused before reading (not a regular file, a link, too large); `str()` says
    why, without the path (the caller names it)."""


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "a special file"


def size_text(size: int) -> str:
    """`12.3 MB` (decimal megabytes), `512 bytes`."""
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size} bytes"


def too_large(size: int, limit: int, kind: Kind = SOURCE) -> str:
    """The message for a file over its kind's limit."""
    return (f"too large to read ({size_text(size)}; Torch-MLIR Lens reads a {kind.name} of up "
            f"to {size_text(limit)})")


_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)


def _open(path: str | os.PathLike[str], kind: Kind) -> int:
    if kind.follow_links:
        return os.open(path, _FLAGS)
    try:
        return os.open(path, _FLAGS | os.O_NOFOLLOW)
    except OSError as exc:
        # ELOOP: the last component is a link (O_NOFOLLOW); refused with the usual message.
        if os.path.islink(path):
            raise UnreadableFile(f"not a regular file ({_kind_of(stat.S_IFLNK)}): a "
                                 f"{kind.name} is never read through a link") from exc
        raise


def is_nameable(path: str) -> bool:
    """Whether the file system can take `path` as a name (no NUL byte, no lone surrogate)."""
    if "\0" in path:
        return False
    try:
        os.fsencode(path)
    except UnicodeError:
        return False
    return True


def _chunks(path: str | os.PathLike[str], kind: Kind) -> Iterator[bytes]:
    """The file's bytes in pieces, checked as `read_bytes` says."""
    limit = kind.limit
    fd = _open(path, kind)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"not a regular file ({_kind_of(st.st_mode)}): only files are "
                                 "read")
        if st.st_size > limit:
            raise UnreadableFile(too_large(st.st_size, limit, kind))
        total = 0
        while total <= limit:  # one more byte than the limit: a file that grew is refused
            chunk = os.read(fd, min(limit + 1 - total, 1 << 20))
            if not chunk:
                return
            total += len(chunk)
            if total > limit:
                raise UnreadableFile(too_large(total, limit, kind))
            yield chunk
    finally:
        os.close(fd)


def _as_kind(kind: Kind | int) -> Kind:
    return Kind(SOURCE.name, kind) if isinstance(kind, int) else kind


def read_bytes(path: str | os.PathLike[str], kind: Kind | int = SOURCE) -> bytes:
    """The bytes of the regular file at `path`, at most the limit of its `kind` (or `kind`
    bytes, when a number).

    Raises UnreadableFile for anything but a regular file, for a link where the kind refuses
    one, or for a file over the limit; OSError when it cannot be opened.
    """
    return b"".join(_chunks(path, _as_kind(kind)))


def read_head(path: str | os.PathLike[str], size: int, kind: Kind = SOURCE) -> bytes:
    """The first `size` bytes of the regular file at `path`, however long it is (a file's
    mark or magic number); refused as `read_bytes` refuses."""
    fd = _open(path, kind)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"not a regular file ({_kind_of(st.st_mode)}): only files are "
                                 "read")
        return os.read(fd, size)
    finally:
        os.close(fd)


def map_region(path: str | os.PathLike[str], offset: int, length: int | None,
               kind: Kind = ONNX_DATA) -> memoryview:
    """`length` bytes of the regular file at `path` from `offset` (to its end when None),
    mapped read-only, not read: pages are read when touched (an ONNX model's weights in an
    external data file). Refused as `read_bytes` refuses; UnreadableFile also when the region
    is not inside the file."""
    import mmap

    fd = _open(path, kind)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"not a regular file ({_kind_of(st.st_mode)}): only files are "
                                 "read")
        if st.st_size > kind.limit:
            raise UnreadableFile(too_large(st.st_size, kind.limit, kind))
        size = st.st_size - offset if length is None else length
        if offset < 0 or size < 0 or offset + size > st.st_size:
            raise UnreadableFile(f"holds {size_text(st.st_size)}, not the {size} bytes at "
                                 f"offset {offset} that the model names")
        if size == 0:
            return memoryview(b"")
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        mapped = mmap.mmap(fd, size + offset - start, access=mmap.ACCESS_READ, offset=start)
        return memoryview(mapped)[offset - start:]
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=64)
def _lines_of(path: str, stamp: tuple[int, int]) -> tuple[str, ...]:
    return tuple(read_text(path, errors="replace").splitlines())


def source_line(path: str, line: int) -> str:
    """Line `line` (1-based) of a source file, as `linecache.getline` gives it but read as
    every file is (bounded, regular files only); "" when there is none or it cannot be read."""
    try:
        st = os.stat(path)
        lines = _lines_of(path, (st.st_mtime_ns, st.st_size))
    except (OSError, ValueError):
        return ""
    return lines[line - 1] + "\n" if 0 < line <= len(lines) else ""


def read_text(path: str | os.PathLike[str], kind: Kind | int = SOURCE, *,
              errors: str = "strict") -> str:
    """The UTF-8 text of the regular file at `path` (a byte-order mark dropped), bounded as
    `read_bytes`; UnicodeDecodeError for other bytes unless `errors` says otherwise."""
    return read_bytes(path, kind).decode("utf-8-sig", errors)


def digest_of(path: str | os.PathLike[str], kind: Kind = SOURCE) -> str | None:
    """sha256 of a file's bytes, read as `read_bytes` reads them; None when it cannot be
    read (gone, a special file, too large)."""
    digest = hashlib.sha256()
    try:
        for chunk in _chunks(path, kind):
            digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()

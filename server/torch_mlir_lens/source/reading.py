"""Reading a file the user named, bounded: regular files only, never more than a limit.

A path or URI can name anything: `/dev/zero` (endless), `/dev/stdin` (the server's own LSP
channel), a FIFO (blocks the reader until someone writes), a 50 GB log. Every read of a file
the user or a client names goes through here: it opens without blocking (a FIFO's open would
wait for a writer), refuses what `fstat` says is not a regular file, and reads at most `limit`
bytes, so nothing can freeze a process or fill its memory.
"""

from __future__ import annotations

import os
import stat

from torch_mlir_lens.defaults import MAX_SOURCE_BYTES


class UnreadableFile(OSError):
    """A file refused before reading (not a regular file, too large); `str()` says why,
    without the path (the caller names it)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "a special file"


def size_text(size: int) -> str:
    """`12.3 MB` (decimal megabytes), `512 bytes`."""
    return f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size} bytes"


def too_large(size: int, limit: int) -> str:
    """The message for a file over the limit."""
    return (f"too large to read ({size_text(size)}; Torch-MLIR Lens reads files up to "
            f"{size_text(limit)})")


def read_bytes(path: str, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them.

    Raises UnreadableFile for anything but a regular file, or one larger than `limit`;
    OSError when it cannot be opened.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableFile(f"not a regular file ({_kind(st.st_mode)}): only files are read")
        if st.st_size > limit:
            raise UnreadableFile(too_large(st.st_size, limit))
        chunks = []
        left = limit + 1  # one more: a file that grew past the limit since fstat is refused
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise UnreadableFile(too_large(len(data), limit))
        return data
    finally:
        os.close(fd)


def read_text(path: str, limit: int = MAX_SOURCE_BYTES, *, errors: str = "strict") -> str:
    """The UTF-8 text of the regular file at `path` (a byte-order mark dropped), bounded as
    `read_bytes`; UnicodeDecodeError for other bytes unless `errors` says otherwise."""
    return read_bytes(path, limit).decode("utf-8-sig", errors)

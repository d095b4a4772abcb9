"""Writing a file whole or not at all: the one way every part of the product replaces a file.

The bytes go to a temporary file beside the target (same folder, so same file system), then
`os.replace` puts it in place: a reader never sees half a file, and a write that fails (disk
full, a crash, a signal) leaves the previous file as it was and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import itertools
import os

_SERIAL = itertools.count()  # temporary names unique within the process; the pid across


def write_atomically(path: str | os.PathLike[str], data: bytes, *, sync: bool = False) -> int:
    """Replace `path` with `data` (its folder made when missing); the bytes written.

    `sync`: flush the bytes to the disk before the rename (an export the user asked for; a
    cache entry does not need it). Raises OSError, with nothing left behind.
    """
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = _temporary_beside(target)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return len(data)


def _temporary_beside(target: str) -> tuple[int, str]:
    """A new file beside `target`, opened for writing (not `tempfile`: its import costs the
    language server's start-up a few milliseconds)."""
    folder, name = os.path.split(os.path.abspath(target))
    while True:
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{next(_SERIAL)}.tmp")
        try:
            # 0o666 less the umask: the permissions any new file of the user gets.
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:  # left by a process of the same pid that was killed
            continue

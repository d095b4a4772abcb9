"""Writing a file whole or not at all: the one way every part of the product replaces a file.

The bytes go to a temporary file beside the target (same folder, so same file system), then
`os.replace` puts it in place: a reader never sees half a file, and a write that fails (disk
full, a crash, a signal) leaves the previous file as it was and no temporary file behind. A
process killed mid-write (SIGKILL) cannot clean up: the next write of the same file removes the
temporaries that writers no longer alive left beside it (`sweep_stale_temporaries`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import stat
import time

_SERIAL = itertools.count()  # temporary names unique within the process; the pid across
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.\d+\.tmp$")
# A temporary whose writer is gone is removed once this old (a writer between its exit and
# the rename would still be alive); any temporary once a day old (another host's writer).
_DEAD_WRITER_AGE_S = 10.0
_ANY_WRITER_AGE_S = 24 * 3600.0


def write_atomically(path: str | os.PathLike[str], data: bytes, *, sync: bool = False) -> int:
    """Replace `path` with `data` (its folder made when missing); the bytes written.

    `sync`: flush the bytes to the disk before the rename (an export the user asked for; a
    cache entry does not need it). Raises OSError, with nothing left behind.
    """
    target = os.fspath(path)
    if "\0" in target:
        raise OSError(f"not a file name (it holds a NUL byte): {target!r}")
    folder = os.path.dirname(os.path.abspath(target))
    os.makedirs(folder, exist_ok=True)
    sweep_stale_temporaries(target)
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


def copy_atomically(path: str | os.PathLike[str], source: str | os.PathLike[str], *,
                    sync: bool = False) -> int:
    """Replace `path` with a copy of the file `source` the product made itself (a compiled
    module), as `write_atomically` would with its bytes, without holding them in memory;
    the bytes written."""
    target = os.fspath(path)
    if "\0" in target:
        raise OSError(f"not a file name (it holds a NUL byte): {target!r}")
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    sweep_stale_temporaries(target)
    fd, tmp = _temporary_beside(target)
    try:
        os.close(fd)
        shutil.copyfile(source, tmp)
        if sync:
            done = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(done)
            finally:
                os.close(done)
        size = os.path.getsize(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return size


def probe(path: str | os.PathLike[str]) -> None:
    """Create and remove a temporary file beside `path`, as a write of it would; OSError
    when the folder does not take one (read-only, full, missing)."""
    fd, tmp = _temporary_beside(os.fspath(path))
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


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


def _writer_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def sweep_stale_temporaries(target: str, *, now: float | None = None,
                            any_writer_age_s: float = _ANY_WRITER_AGE_S) -> int:
    """Remove the temporaries of `target` that killed writers left beside it; how many.

    A temporary goes once its writer is gone, or once older than `any_writer_age_s` whatever
    its name says (a copied or planted folder's pids mean nothing here), or when its time is
    in the future. Only regular files named as `write_atomically` names them, never through
    a link."""
    folder, name = os.path.split(os.path.abspath(target))
    now = time.time() if now is None else now
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        found = _TEMPORARY.match(entry.name)
        if found is None or found["name"] != name:
            continue
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                continue
            age = now - st.st_mtime
            if age > any_writer_age_s or age < -_DEAD_WRITER_AGE_S or (
                    age > _DEAD_WRITER_AGE_S and not _writer_alive(int(found["pid"]))):
                os.unlink(entry.path)
                removed += 1
    return removed

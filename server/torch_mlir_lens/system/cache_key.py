"""The per-user key that authenticates everything the product reads back from its caches.

A cache folder is an attack surface like a source file: the documented CI workflow keeps the
persistent cache inside the checkout, where a pull request can commit entries, and a shared or
copied folder can hold anything. So every entry the product writes (a lowering's reply, a
traced block, the generated code the server starts with, the first answers to `initialize`)
carries an HMAC-SHA256 tag under a secret key, and a read whose tag does not verify is a miss:
a forged, copied or swapped entry is never believed, it is replaced.

The key is the user's, never a repository's:
- `$TORCH_MLIR_LENS_CACHE_KEY` when set (CI passes one as a secret, so a cache restored
  between runs is still trusted; a fork's pull request, without the secret, gets misses);
- else 32 random bytes in `cache-key` of the user's configuration folder (e.g.
  `~/.config/torch-mlir-lens/` on Linux), outside any cache folder and any repository, created
  on first use with mode 0600 and used only while it stays a regular file of this user that
  nobody else can read. Without a usable key there is no persistent cache (a log line says
  why), never an unauthenticated one.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import stat
from functools import cache
from pathlib import Path

from torch_mlir_lens.system.reading import CACHE_KEY, read_bytes

log = logging.getLogger(__name__)

KEY_ENV = "TORCH_MLIR_LENS_CACHE_KEY"
KEY_FILE = "cache-key"
MIN_SECRET_CHARS = 16  # a secret given in the environment: shorter ones are guessable
TAG_BYTES = 32  # HMAC-SHA256


def key_path() -> Path:
    """Where the user's key lives (the platform's user configuration folder)."""
    import platformdirs  # only when a cache is used: not on the start-up path

    return Path(platformdirs.user_config_dir("torch-mlir-lens", appauthor=False)) / KEY_FILE


class KeyUnusable(Exception):
    """Why no key can be had (one line)."""


def _owned_private(st: os.stat_result) -> str | None:
    """Why a key file with these stats is not to be used, or None."""
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return "it belongs to another user"
    if st.st_mode & 0o077:
        return f"others may read or write it (mode {stat.S_IMODE(st.st_mode):o}; make it 600)"
    if st.st_nlink != 1:
        return "it has other names (a hard link): another file's content is no key"
    return None


def _private_folder(folder: Path) -> str | None:
    """Why the key's folder cannot keep a key private (others may replace the file), or None."""
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        return "its folder is not a folder"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return "its folder belongs to another user"
    if st.st_mode & 0o022:
        return (f"others may write in its folder (mode {stat.S_IMODE(st.st_mode):o}; "
                "make it 700)")
    return None


def _read_key(path: Path) -> bytes:
    st = os.lstat(path)
    problem = _private_folder(path.parent) or _owned_private(st)
    if problem is not None:
        raise KeyUnusable(f"{path}: {problem}")
    secret = read_bytes(path, CACHE_KEY)  # never through a link
    if len(secret) < TAG_BYTES:
        raise KeyUnusable(f"{path}: too short to be a key ({len(secret)} bytes)")
    return secret


def _create_key(path: Path) -> None:
    """Write a new random key, whole, where none is; another process may win the race."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(TAG_BYTES))
        with contextlib.suppress(FileExistsError):  # another process made one first: theirs
            os.link(tmp, path)  # atomic, and never over an existing file
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


@cache
def cache_secret() -> bytes | None:
    """The key, created on first use; None (and one log line) when none can be had."""
    given = os.environ.get(KEY_ENV)
    if given:  # empty: not given (a CI secret a fork's pull request does not get)
        if len(given.strip()) < MIN_SECRET_CHARS:
            log.warning("persistent cache off: %s holds fewer than %d characters", KEY_ENV,
                        MIN_SECRET_CHARS)
            return None
        return hashlib.sha256(given.encode("utf-8", "surrogateescape")).digest()
    try:
        path = key_path()
        try:
            return _read_key(path)
        except FileNotFoundError:
            _create_key(path)
            return _read_key(path)
    except (KeyUnusable, OSError) as exc:
        log.warning("persistent cache off: no usable cache key (%s)", exc)
        return None


def tag(secret: bytes, purpose: str, name: str, payload: bytes) -> bytes:
    """The HMAC of `payload`, stored as `name` for `purpose` (an entry copied under another
    name or into another cache does not verify)."""
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    mac.update(f"torch-mlir-lens\0{purpose}\0{name}\0".encode("utf-8", "surrogateescape"))
    mac.update(payload)
    return mac.digest()


def seal(secret: bytes, purpose: str, name: str, payload: bytes) -> bytes:
    """`payload` with its tag in front, as stored."""
    return tag(secret, purpose, name, payload) + payload


def unseal(secret: bytes, purpose: str, name: str, blob: bytes) -> bytes | None:
    """The payload of a stored blob when its tag verifies, else None."""
    if len(blob) < TAG_BYTES:
        return None
    stored, payload = blob[:TAG_BYTES], blob[TAG_BYTES:]
    if not hmac.compare_digest(stored, tag(secret, purpose, name, payload)):
        return None
    return payload

"""Start-up: the code attrs and cattrs generate, compiled once and kept between starts.

lsprotocol defines some 550 attrs classes, and attrs writes and compiles their methods
(`__init__`, `__repr__`, `__eq__`, ...) every time the module is imported; cattrs compiles a
converter function per type the first time the server reads or writes it. That compiling is
about a third of what `serve` does before it answers the first lenses (instructions counted
with callgrind: 2.90 G without this cache, 1.96 G with it). The code objects are kept in the
user's cache folder, one file per Python build (marshal's format is the interpreter's), and
reused whenever the generated source, its file name and mode are the same.

Source whose text differs from one process to the next is not kept: attrs' `__hash__` embeds
a per-process hash of a name. A missing, truncated or foreign file is ignored (a cold start),
and the file is replaced atomically, so two servers starting at once cannot corrupt it.

Code objects run, so the file is believed only when it is this user's own: it carries an HMAC
under the user's cache key (`system/cache_key.py`), checked before `marshal` sees a byte, and
it is read bounded and never through a link. A forged, copied or damaged file is a cold start
and is replaced; without a key nothing is read or kept.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib.util
import marshal
import sys
import threading
import types
from pathlib import Path
from typing import Any

from torch_mlir_lens.system import cache_key
from torch_mlir_lens.system.atomic_write import write_atomically
from torch_mlir_lens.system.reading import GENERATED_CODE, read_bytes

# Modules whose `compile` is routed through the cache: attrs' method generation, cattrs' code
# generation. They look `compile` up as a module global, so setting one shadows the builtin.
PATCHED_MODULES = ("attr._make", "cattrs.gen")
_VOLATILE = "def __hash__"  # attrs embeds hash(<name>), salted per process
_PURPOSE = "generated-code"


def default_path() -> Path:
    """The cache file for this Python build, in the user's cache folder."""
    import platformdirs

    build = importlib.util.MAGIC_NUMBER.hex()
    folder = Path(platformdirs.user_cache_dir("torch-mlir-lens", appauthor=False))
    return folder / "generated-code" / f"py{sys.version_info[0]}{sys.version_info[1]}-{build}"


class GeneratedCodeCache:
    """Code objects by (source, file name, mode); `install` routes attrs and cattrs to it."""

    def __init__(self, path: Path, secret: bytes | None = None) -> None:
        self.path = path
        self._secret = secret if secret is not None else cache_key.cache_secret()
        self.hits = 0
        self.compiled = 0  # sources compiled here (new, or not kept)
        self._entries: dict[str, types.CodeType] = {}
        self._used: set[str] = set()
        self._new = False
        self._lock = threading.Lock()
        loaded = self._load()
        if isinstance(loaded, dict):
            self._entries = {k: v for k, v in loaded.items()
                             if isinstance(k, str) and isinstance(v, types.CodeType)}

    def _load(self) -> Any:
        """The stored code objects, when the file is ours (its tag verifies), else None."""
        if self._secret is None:
            return None
        try:
            blob = read_bytes(self.path, GENERATED_CODE)  # bounded, never through a link
        except OSError:
            return None
        payload = cache_key.unseal(self._secret, _PURPOSE, self.path.name, blob)
        if payload is None:
            return None
        try:
            return marshal.loads(payload)
        except (EOFError, ValueError, TypeError):
            return None

    def compile(self, source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        """`compile`, answered from the cache when the same source was compiled before."""
        if args or kwargs or not isinstance(source, str) or _VOLATILE in source:
            self.compiled += 1
            return builtins.compile(source, filename, mode, *args, **kwargs)
        key = hashlib.sha1(f"{filename}\0{mode}\0{source}".encode()).hexdigest()
        code = self._entries.get(key)
        if code is None:
            code = builtins.compile(source, filename, mode)
            self.compiled += 1
            with self._lock:
                self._entries[key] = code
                self._new = True
        else:
            self.hits += 1
        self._used.add(key)
        return code

    def install(self) -> None:
        """Route attrs' and cattrs' code generation through this cache."""
        import importlib

        for name in PATCHED_MODULES:
            with contextlib.suppress(ImportError):
                module = importlib.import_module(name)
                module.compile = self.compile  # type: ignore[attr-defined]

    def save(self) -> None:
        """Write the entries used by this process, if any were new; never raises."""
        with self._lock:
            if not self._new or self._secret is None:
                return
            kept = {k: v for k, v in self._entries.items() if k in self._used}
            self._new = False
        # A read-only home: every start compiles, as without the cache.
        with contextlib.suppress(OSError, ValueError):
            write_atomically(self.path, cache_key.seal(self._secret, _PURPOSE, self.path.name,
                                                       marshal.dumps(kept)))

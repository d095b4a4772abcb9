"""The user's files as the worker executed them: each one's digest, taken before its code ran.

A lowering's answer depends on the user files its module imported, in its own folder or any
other (`from lib.acts import Act`, with `lib` in another workspace folder). Their digests are
taken here as each is read — when the import system executes a source file (`exec_module`),
when the loader reads a file by path — and compared with the file again once the job is done
(`provenance.py`): a file saved while the job ran makes its answer unstable, never kept, instead
of an entry trusted for ever with the old result. A held exported program is reused only while
the files it read are unchanged (`unchanged`), and a module whose file changed is imported
afresh at the next job, whatever its folder (loader.py).

`module_file` reads a module's `__file__` without ever importing anything: a library's lazy
module (`LazyModule`) imports on attribute access and raises ImportError, not AttributeError.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.machinery
import os
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.system.reading import digest_of, read_bytes
from torch_mlir_lens.worker.loading.hygiene import is_library_file
from torch_mlir_lens.worker.process import WORKER


@dataclass
class _Executed:
    """The digest of each user file the worker executed, and whether imports are watched."""

    digests: dict[str, str] = field(default_factory=dict)  # absolute path → sha256
    installed: bool = False


def _executed() -> _Executed:
    return WORKER.part(_Executed)


def module_file(module: Any) -> str | None:
    """`module.__file__` when it is a string, else None; never imports, never raises."""
    try:
        file = vars(module).get("__file__")
    except Exception:  # a lazy module whose attribute access imports, and fails
        return None
    return file if isinstance(file, str) else None


@functools.lru_cache(maxsize=4096)  # every user module is asked about at each job
def is_user_source(path: str) -> bool:
    """A `.py` file of the user's (not an installed library's, not the standard library, not
    this product's own: its build is part of every cache key already)."""
    return path.endswith(".py") and not is_library_file(path) and not is_product_file(path)


_PRODUCT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def is_product_file(path: str) -> bool:
    """A file of this package (an editable checkout is not "installed", yet not the user's)."""
    return os.path.realpath(path).startswith(_PRODUCT + os.sep)


def record(path: str, data: bytes) -> None:
    """`path` was read as `data`, to be executed."""
    _executed().digests[os.path.abspath(path)] = hashlib.sha256(data).hexdigest()


def read_source(path: str) -> str:
    """The text of a user file read to be executed (bounded; its digest recorded)."""
    data = read_bytes(path)
    record(path, data)
    return data.decode("utf-8-sig")


def digest(path: str) -> str | None:
    """The digest of `path` as it was executed, if the worker read it."""
    return _executed().digests.get(os.path.abspath(path))


def changed_since_read(path: str) -> bool:
    """Whether `path` differs now from what was executed (False when never recorded)."""
    then = digest(path)
    return then is not None and digest_of(path) != then


def unchanged(files: Mapping[str, str]) -> bool:
    """Whether each file still has the digest recorded for it."""
    return all(digest_of(path) == sha for path, sha in files.items())


def changed(paths: Iterable[str]) -> list[str]:
    """Those of `paths` whose content changed since the worker executed them."""
    return [p for p in paths if changed_since_read(p)]


def install() -> None:
    """Record every user source file the import system executes, before it executes it."""
    executed = _executed()
    if executed.installed:
        return
    loader_class = importlib.machinery.SourceFileLoader
    original = loader_class.exec_module

    def exec_module(self: Any, module: types.ModuleType) -> None:
        path = getattr(self, "path", None)
        if isinstance(path, str) and is_user_source(path):
            # Unreadable: the import itself says what is wrong with the file.
            with contextlib.suppress(OSError):
                record(path, read_bytes(path))
        original(self, module)

    loader_class.exec_module = exec_module  # type: ignore[method-assign]
    executed.installed = True

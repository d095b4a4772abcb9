"""What a lowering's answer depends on besides the job itself: for the persistent result cache.

The engine's cache key covers the job (the module's fingerprint, inputs, settings, options)
and the environment (interpreter, torch, torch-mlir, this package). What it cannot know is
which other files the module's code executed and which installed libraries it came from:
the worker reports them here, after the job, so that a cached answer is used only while each
file still has the same content and each library the same version.

What the job's module reached through the imports the worker recorded (import_graph.py):
its imports and theirs, the files its job loaded by path (a parent module giving it inputs),
and any module that appeared during the job by other means; each non-library file of these
and each installed distribution they came from. A file too many costs a needless miss when it
changes; a file too few would serve a stale answer, so when in doubt a file is kept. Files
that user code reads with `open()` are not tracked (documented in the README).

Each file's digest is the one taken before its code ran (`file_states.py`), compared with the
file once more here: a file saved while the job ran makes the answer `unstable` (listed), and
the engine keeps no such answer, in memory or on disk.

And what was *not* there: `"absent": {folder: [name, ...]}`, the top-level modules the code
imported and the user's folders that were searched for them, in vain, before the folder they
came from (`search_path.py`). A file that later appears under one of those names (a package
shadowing a library) makes the answer stale too.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Iterable
from functools import cache
from typing import Any

from torch_mlir_lens.protocol.frames import in_installed_package
from torch_mlir_lens.system.reading import digest_of
from torch_mlir_lens.worker.loading import file_states, import_graph, loader, search_path
from torch_mlir_lens.worker.loading.file_states import module_file
from torch_mlir_lens.worker.loading.loader import (
    USER_PACKAGE,
    module_name_for,
    modules_loaded_since_start,
)


@cache
def _library_roots() -> tuple[str, ...]:
    """Folders whose files are installed code, not the user's."""
    import site
    import sysconfig

    roots = {sys.prefix, sys.exec_prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"]}
    roots.update(site.getsitepackages())
    roots.add(site.getusersitepackages())
    return tuple(sorted({os.path.realpath(r) + os.sep for r in roots if r}))


@cache
def _distributions_of() -> dict[str, list[str]]:
    """Top-level import name → the distributions providing it (computed once per worker)."""
    return dict(importlib.metadata.packages_distributions())


def _is_library(real: str) -> bool:
    return in_installed_package(real) or real.startswith(_library_roots())


def _is_ours(real: str) -> bool:
    """This product's own modules (imported lazily during a job): its build is keyed already."""
    return file_states.is_product_file(real)


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes, or None when it cannot be read."""
    return digest_of(path)  # bounded, regular files only


def _depended_on(job_path: str, loaded_by_path: Iterable[str]) -> list[tuple[str, Any]]:
    """(name, module) of what the job's module reached: through the imports recorded since
    the worker started (import_graph), else (a job run in-process) everything loaded."""
    loaded = modules_loaded_since_start()
    if not import_graph.installed():
        return loaded
    reached = import_graph.reached_from(
        {module_name_for(job_path), *loader.touched(), *loaded_by_path})
    return [(name, module) for name, module in loaded if name in reached]


def provenance(job_path: str, loaded_by_path: Iterable[str] = (), *,
               libraries: bool = True) -> dict[str, Any]:
    """`{"files": {path: sha256}, "libraries": {distribution: version}}` of what the job's
    code loaded, and `"unstable": [path, ...]` when some of those files changed since their
    code ran. The job's own file is left out: its text is part of the job (unsaved edits).
    `loaded_by_path`: the modules the job that exported its program loaded by path.
    `libraries` False: the files only (what a held program checks before it is reused)."""
    own = os.path.abspath(job_path)
    files: dict[str, str] = {}
    unstable: list[str] = []
    tops: set[str] = set()
    dirs = search_path.user_search_dirs()
    absent: dict[str, set[str]] = {}
    for name, module in _depended_on(job_path, loaded_by_path):
        file = module_file(module)
        if "." not in name and isinstance(file, str) and not name.startswith(USER_PACKAGE):
            for folder in search_path.searched_before(search_path.home_of(name, file), dirs):
                absent.setdefault(folder, set()).add(name)
        if not isinstance(file, str) or not file.endswith(".py"):
            continue
        path = os.path.abspath(file)
        real = os.path.realpath(path)
        if _is_ours(real):
            continue
        if _is_library(real):
            tops.add(name.partition(".")[0])
        elif path != own and (now := file_digest(path)) is not None:
            executed = file_states.digest(path)
            if executed is not None and executed != now:
                unstable.append(path)
            files[path] = executed or now
    out: dict[str, Any] = {"files": dict(sorted(files.items())),
                           "libraries": _versions(tops) if libraries else {},
                           "absent": {d: sorted(n) for d, n in sorted(absent.items())}}
    if unstable:
        out["unstable"] = sorted(unstable)
    return out


def _versions(tops: Iterable[str]) -> dict[str, str]:
    """The installed distributions providing these top-level modules, with their versions."""
    found: dict[str, str] = {}
    providers = _distributions_of()
    for top in tops:
        for dist in providers.get(top, ()):
            try:
                found[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
    return dict(sorted(found.items()))

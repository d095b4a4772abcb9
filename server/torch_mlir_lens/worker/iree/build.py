"""A program's Linalg IR compiled by IREE, once per target and architecture.

    compiled_for(lowerer, target, arch, weightless=...) → Compiled (kept while the lowerer is)

`lower`, `verify`, `export` and a profile of the same module reuse one compile: each
lowerer (one exported program, `worker/lowering/`) keeps its compiled modules in a private
temporary folder that goes when the lowerer does (a weak reference: nothing here keeps a
program alive), or when more than KEPT compiles are held.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.worker.iree.compile_input import write_input
from torch_mlir_lens.worker.iree.compiler import Compiled, compile_module
from torch_mlir_lens.worker.iree.tools import Install
from torch_mlir_lens.worker.process import WORKER

KEPT = 8  # compiled modules held in the worker, all programs together


@dataclass
class _Entry:
    compiled: Compiled
    folder: str
    finalizer: Any  # removes the folder when the lowerer goes


_Key = tuple[int, str, str | None, bool]  # (id of the lowerer, target, arch, weightless)


def _held() -> BoundedCache[_Key, _Entry]:
    """The compiled modules held, all programs together (an evicted one's folder goes)."""
    return WORKER.part(_Held).entries


@dataclass
class _Held:
    entries: BoundedCache[_Key, _Entry] = field(
        default_factory=lambda: BoundedCache(KEPT, on_evict=lambda _key, entry: entry.finalizer()))


def compiled_for(install: Install, lowerer: Any, linalg: Any, target: str, arch: str | None,
                 *, weightless: bool) -> Compiled:
    """`linalg` (the lowerer's Linalg module) compiled for `target` at `arch`: from the
    lowerer's earlier compile when there is one."""
    key = (id(lowerer), target, arch or None, weightless)
    held = _held()
    entry = held.get(key)
    if entry is not None and entry.finalizer.alive:
        return entry.compiled
    folder = tempfile.mkdtemp(prefix="torch-mlir-lens-iree-")
    finalizer = weakref.finalize(lowerer, shutil.rmtree, folder, True)
    try:
        source = write_input(linalg, folder, weightless=weightless)
        compiled = compile_module(install, source, target, arch or None, folder)
    except BaseException:
        finalizer()
        raise
    held.put(key, _Entry(compiled, folder, finalizer))
    weakref.finalize(lowerer, held.pop, key)
    return compiled


def compile_scratch(install: Install, linalg: Any, target: str, arch: str | None,
                    folder: str) -> Compiled:
    """Compile a module of one's own (an instrumented copy, verify.py) into `folder`."""
    return compile_module(install, write_input(linalg, folder, weightless=False), target,
                          arch, folder, name="scratch")


__all__ = ["KEPT", "compile_scratch", "compiled_for"]

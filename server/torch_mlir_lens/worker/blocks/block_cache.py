"""Traced blocks kept across lowerings, keyed by what the block computes and where its code is.

A block function is valid for another lowering when the block runs the same ops on the same
kinds of values (the survey's digest: class, input and weight types, every op) and its code
sits where it sat (its source lines are in the IR's locations). The second part is the class's
code fingerprint in its file (`discovery.fingerprint.code_fingerprint`: its definition, the
definitions it uses and the code between them, with their line numbers; not the parent
classes), or, for a class in an installed library, the file's size and time; the other user
files its ops have lines in are checked by their content when the entry is used. An edit to the
parent (below the block, or not moving its lines) re-uses the traced block; an edit to the
block traces it again.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.discovery.fingerprint import code_fingerprint
from torch_mlir_lens.worker.ir.locations import UserFiles

MAX_ENTRIES = 16
_FILE = re.compile(r'File "([^"]+)", line \d+')

_entries: OrderedDict[str, Traced] = OrderedDict()
counters: dict[str, int] = {"block_traces": 0, "block_cache_hits": 0}


@dataclass
class Traced:
    """A block's exported function and its raw MLIR (bytecode, made at its first import)."""

    program: Any  # torch.export.ExportedProgram, decompositions applied
    run: Callable[..., Any]  # the function, runnable eagerly (the stitched op's CPU kernel)
    raw: bytes | None = None
    files: dict[str, str] = field(default_factory=dict)  # other user files → content hash


def _sha(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return f.read()
    except OSError:
        return None


def source_key(cls: type, users: UserFiles, texts: dict[str, str]) -> str | None:
    """Where the class's code is, as a key (None: unknown, nothing is cached)."""
    path = class_file(cls)
    if path is None:
        return None
    if path in users:
        text = texts.get(path)
        if text is None:
            text = _read(path)
        if text is None:
            return None
        return _sha("user", path, code_fingerprint(text, cls.__qualname__, path))
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _sha("library", path, stat.st_mtime_ns, stat.st_size)


def _frame_files(program: Any, users: UserFiles, skip: str | None) -> dict[str, str]:
    """The user files (other than `skip`) the program's ops have lines in, by content hash."""
    files: dict[str, str] = {}
    for node in program.graph.nodes:
        for path in _FILE.findall(node.meta.get("stack_trace") or ""):
            if path in users and path != skip and path not in files:
                files[path] = _sha(_read(path))
    return files


def lookup(key: str | None) -> Traced | None:
    """The traced block under `key`, if its other files are unchanged."""
    if key is None:
        return None
    entry = _entries.get(key)
    if entry is None:
        return None
    if any(_sha(_read(path)) != digest for path, digest in entry.files.items()):
        del _entries[key]
        return None
    _entries.move_to_end(key)
    counters["block_cache_hits"] += 1
    return entry


def class_file(cls: type) -> str | None:
    """The file of the class's forward (where its block's lines are)."""
    code = getattr(getattr(cls, "forward", None), "__code__", None)
    return os.path.normpath(code.co_filename) if code is not None else None


def store(key: str | None, entry: Traced, users: UserFiles, class_file: str | None) -> None:
    """Keep `entry` under `key` (the oldest entries go past MAX_ENTRIES)."""
    counters["block_traces"] += 1
    if key is None:
        return
    entry.files = _frame_files(entry.program, users, class_file)
    _entries[key] = entry
    _entries.move_to_end(key)
    while len(_entries) > MAX_ENTRIES:
        _entries.popitem(last=False)


def clear() -> None:
    """Forget every traced block."""
    _entries.clear()


__all__ = ["MAX_ENTRIES", "Traced", "class_file", "clear", "counters", "lookup", "source_key",
           "store"]

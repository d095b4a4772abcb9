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

Two tiers. In memory, the last `MAX_ENTRIES` blocks of this worker, whole. On disk, in the
persistent cache's folder when the engine names one (`use_folder`), the block's function as
MLIR bytecode, under its key and the environment's (`system/environment.py`: interpreter,
torch, torch-mlir, this package's build): a restarted server, another editor window and each
engine of `check` find a block any of them traced. What a stitched lowering needs of a block
is its bytecode; its ExportedProgram (the `fx` target, a culprit's search, the stitched op's
eager kernel) is traced again only when one of those asks (`Traced.program`). A block whose
program lifted tensor constants is kept in memory only: the bytecode does not carry them apart.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.discovery.fingerprint import code_fingerprint
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.system.disk_cache import DiskCache, file_digest
from torch_mlir_lens.system.environment import environment_key
from torch_mlir_lens.system.reading import read_bytes
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.process import WORKER

log = logging.getLogger(__name__)

MAX_ENTRIES = 16
DISK_MAX_BYTES = 128 * 1024 * 1024  # the blocks' share of the persistent cache
DISK_SUBFOLDER = "blocks"  # beside the engine's replies, in the persistent cache's folder
_FILE = re.compile(r'File "([^"]+)", line \d+')



@dataclass
class Traced:
    """A block's exported function: its raw MLIR (bytecode) and, when traced in this worker
    or asked for since, its ExportedProgram."""

    raw: bytes | None = None
    files: dict[str, str] = field(default_factory=dict)  # other user files → sha256
    # Files its ops have lines in that were not the user's (their lines are not in the IR):
    # an entry is used only where the same files are, and are not, the user's.
    foreign: list[str] = field(default_factory=list)
    stored: bool = False  # read from the disk tier (its program is traced again on demand)
    # How to trace the program again (set by each lowering using an entry read from disk:
    # its representative call, of that lowering's module).
    retrace: Callable[[], Any] | None = None
    _program: Any = None

    @classmethod
    def of(cls, program: Any) -> Traced:
        """A block traced in this worker."""
        return cls(_program=program)

    @property
    def program(self) -> Any:
        """The torch.export.ExportedProgram (decompositions applied), traced again when the
        entry came from disk."""
        if self._program is None:
            if self.retrace is None:
                raise RuntimeError("a stored block function has no call to trace it again")
            self._program = self.retrace()
        return self._program

    @property
    def constants(self) -> dict[str, Any]:
        """The program's lifted constants (none for an entry read from disk: only blocks
        without any are stored)."""
        if self._program is None:
            return {}
        return dict(getattr(self._program, "constants", None) or {})

    def run(self, *tensors: Any) -> Any:
        """The block function run eagerly (the stitched op's CPU kernel), before or after the
        FX import froze its constants."""
        import torch

        program = self.program
        gm = program.graph_module
        inputs = [n for n in gm.graph.nodes if n.op == "placeholder"]
        with torch.no_grad():
            return (gm if len(inputs) == len(tensors) else program.module())(*tensors)


def _sha(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _read(path: str) -> str | None:
    try:
        return read_bytes(path).decode("utf-8", "surrogateescape")  # bounded, regular files
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


def _frame_files(program: Any, users: UserFiles,
                 skip: str | None) -> tuple[dict[str, str], list[str]]:
    """The user files (other than `skip`) the program's ops have lines in, by content hash;
    and the other files they have lines in."""
    files: dict[str, str] = {}
    foreign: set[str] = set()
    for node in program.graph.nodes:
        for path in _FILE.findall(node.meta.get("stack_trace") or ""):
            if path in users:
                if path != skip and path not in files:
                    files[path] = file_digest(path) or ""
            else:
                foreign.add(path)
    return files, sorted(foreign)


def _holds(entry: Traced, users: UserFiles) -> bool:
    """Whether the entry's other files are unchanged and the user's as they were."""
    return (all(path in users and file_digest(path) == digest
                for path, digest in entry.files.items())
            and not any(path in users for path in entry.foreign))


@dataclass
class _Blocks:
    """The traced blocks this worker holds, its disk tier and its counts (the worker's part)."""

    entries: BoundedCache[str, Traced] = field(default_factory=lambda: BoundedCache(MAX_ENTRIES))
    disk: DiskCache | None = None
    counters: dict[str, int] = field(default_factory=lambda: {
        "block_traces": 0, "block_cache_hits": 0, "block_disk_hits": 0, "block_disk_writes": 0})


def _blocks() -> _Blocks:
    return WORKER.part(_Blocks)


def counters() -> dict[str, int]:
    """How many blocks were traced, found in memory or on disk, and written to disk."""
    return dict(_blocks().counters)


def use_folder(folder: str | None) -> None:
    """Keep traced blocks on disk in `folder`'s blocks subfolder (None: in memory only)."""
    blocks = _blocks()
    root = os.path.join(folder, DISK_SUBFOLDER) if folder else None
    if blocks.disk is not None and root is not None and str(blocks.disk.folder.parent) == root:
        return
    blocks.disk = DiskCache(root, DISK_MAX_BYTES, purpose="blocks", validate=_stored_block_ok,
                      top=folder) if root is not None else None


def _stored_block_ok(reply: Any) -> bool:
    """A stored block's shape: its bytecode (base64), the files it depends on, foreign ones."""
    return (isinstance(reply.get("raw"), str) and isinstance(reply.get("files"), dict)
            and all(isinstance(k, str) and isinstance(v, str)
                    for k, v in reply["files"].items())
            and isinstance(reply.get("foreign"), list)
            and all(isinstance(p, str) for p in reply["foreign"]))


def _disk_key(key: str) -> str | None:
    import sys

    environment = environment_key(sys.executable)
    return _sha("block", environment, key) if environment is not None else None


def lookup(key: str | None, users: UserFiles) -> tuple[Traced | None, str]:
    """The traced block under `key`, if its other files are unchanged, and where it was
    found ("memory" or "disk"; "" when it was not)."""
    if key is None:
        return None, ""
    blocks = _blocks()
    entry = blocks.entries.get(key)
    if entry is not None and not _holds(entry, users):
        blocks.entries.pop(key)
        entry = None
    if entry is not None:
        blocks.counters["block_cache_hits"] += 1
        return entry, "memory"
    entry = _from_disk(key)
    if entry is None or not _holds(entry, users):
        return None, ""
    blocks.entries.put(key, entry)
    blocks.counters["block_disk_hits"] += 1
    return entry, "disk"


def _from_disk(key: str) -> Traced | None:
    disk = _blocks().disk
    disk_key = _disk_key(key) if disk is not None else None
    if disk is None or disk_key is None:
        return None
    stored = disk.get(disk_key)  # None unless whole, of this key, and its files unchanged
    raw = stored.get("raw") if stored else None
    files = stored.get("files") if stored else None
    foreign = stored.get("foreign") if stored else None
    if not (isinstance(raw, str) and isinstance(files, dict) and isinstance(foreign, list)):
        return None
    try:
        data = base64.b64decode(raw.encode("ascii"), validate=True)
    except ValueError:
        return None
    return Traced(raw=data, files={str(k): str(v) for k, v in files.items()},
                  foreign=[str(p) for p in foreign], stored=True)


def class_file(cls: type) -> str | None:
    """The file of the class's forward (where its block's lines are)."""
    code = getattr(getattr(cls, "forward", None), "__code__", None)
    return os.path.normpath(code.co_filename) if code is not None else None


def store(key: str | None, entry: Traced, users: UserFiles, class_file: str | None) -> None:
    """Keep a block traced in this worker under `key` (the oldest entries go past
    MAX_ENTRIES); its raw MLIR must be made first."""
    blocks = _blocks()
    blocks.counters["block_traces"] += 1
    if key is None:
        return
    entry.files, entry.foreign = _frame_files(entry.program, users, class_file)
    blocks.entries.put(key, entry)
    _to_disk(key, entry)


def _to_disk(key: str, entry: Traced) -> None:
    blocks = _blocks()
    disk_key = _disk_key(key) if blocks.disk is not None else None
    if blocks.disk is None or disk_key is None or entry.raw is None or entry.constants:
        return
    reply = {"raw": base64.b64encode(entry.raw).decode("ascii"), "files": entry.files,
             "foreign": entry.foreign}
    # The files are checked again by the disk tier at each read (they are its provenance).
    blocks.disk.put(disk_key, reply, {"files": entry.files, "libraries": {}})
    blocks.counters["block_disk_writes"] += 1


def forget(key: str) -> None:
    """Drop the entry under `key` from memory (its disk entry is replaced at the next store)."""
    _blocks().entries.pop(key)


def clear() -> None:
    """Forget every traced block held in memory (the disk tier stays)."""
    _blocks().entries.clear()


__all__ = ["DISK_MAX_BYTES", "MAX_ENTRIES", "Traced", "class_file", "clear", "counters",
           "forget", "lookup", "source_key", "store", "use_folder"]

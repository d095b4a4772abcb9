"""Which answers read which files: what makes an answer stale when something changes on disk.

Each answer the engine keeps (a lowering, a failure) was made by a worker that reported what
it read (`worker/loading/provenance.py`): the user files, with the digest of what it read, and
the module names it looked for in vain in the user's folders. Here they are kept by answer, so
that a change to one of those files, or a new file under one of those names (a package that
now shadows an import), names every file whose answers are stale, whatever its folder; and
so that a poll of the disk (`lsp/checks/disk_watch.py`) can tell a file that differs from what
some answer read. Paths are real paths: an import through a linked folder and an event naming
the file itself meet here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

UNKNOWN = ""  # the digest of a file a failure read (failures report paths only)


class Reads:
    """file → {answer's key: (the file the answer is for, digest read)}, and the absences."""

    def __init__(self) -> None:
        self._by_file: dict[str, dict[str, tuple[str, str]]] = {}
        self._absences: dict[tuple[str, str], dict[str, str]] = {}  # (folder, name) → ...

    def note(self, key: str, reader: str, files: Mapping[str, str] | Iterable[str],
             absent: Mapping[str, Iterable[str]] | None = None) -> None:
        """The answer `key` (for the file `reader`) read `files` (path → digest, or paths),
        and looked for the `absent` names in those folders in vain."""
        reader = os.path.abspath(reader)
        digests = files.items() if isinstance(files, Mapping) else ((f, UNKNOWN) for f in files)
        for file, digest in digests:
            self._by_file.setdefault(os.path.realpath(file), {})[key] = (reader, digest)
        for folder, names in (absent or {}).items():
            for name in names:
                self._absences.setdefault((os.path.realpath(folder), name), {})[key] = reader

    def stale_after(self, path: str) -> set[str]:
        """The files whose answers a change to `path` makes stale (answers that read it, or
        that looked in vain for the module it offers). Kept, not forgotten: an unsaved edit
        and its save both ask, and the answers made again replace their entries."""
        readers = {reader for reader, _ in self._by_file.get(os.path.realpath(path), {}).values()}
        for offered in names_offered(path):
            readers |= set(self._absences.get(offered, {}).values())
        return readers

    def files(self) -> dict[str, set[str]]:
        """Every file some kept answer read, with the digests they read."""
        return {file: {digest for _, digest in by_key.values()}
                for file, by_key in self._by_file.items()}


def names_offered(path: str) -> list[tuple[str, str]]:
    """(folder, module name) an import would find in `path`: `dir/x.py` offers x in dir, and
    `dir/x/__init__.py` offers x in dir."""
    real = os.path.realpath(path)
    folder, name = os.path.split(real)
    stem = name.split(".", 1)[0]
    if stem == "__init__":
        parent, package = os.path.split(folder)
        return [(parent, package)]
    return [(folder, stem)] if stem else []

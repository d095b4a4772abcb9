"""Files the answers read, watched on disk: a change made without any event still counts.

Editors report saves (`didSave`) and, when they can register a watcher, changes on disk
(`didChangeWatchedFiles`); a client that cannot (Neovim 0.7 without a watcher, a file changed
by `git checkout` outside a watched folder) says nothing. While the engine is up, the files its
answers read are looked at every `INTERVAL_S`: a `stat` each, and only when that changed (or
at the first look) a read, to compare the file with what the answer read (the digest in its
provenance). One that differs is handled as a save (`state_changes.files_saved`): the answers
that read it go and the open documents that read it are checked again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import TYPE_CHECKING

from torch_mlir_lens.lsp.checks import state_changes
from torch_mlir_lens.system.reading import digest_of

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

INTERVAL_S = 2.0

Stamp = tuple[int, int] | None


def _stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return None  # gone: a change too, once
    return st.st_mtime_ns, st.st_size


def changed_files(files: dict[str, set[str]], seen: dict[str, Stamp]) -> list[str]:
    """The files that differ from what some answer read (`files`: path → the digests read;
    "" where unknown), read only when their stamp moved since the last look (or at the first
    look); `seen` is brought up to date."""
    changed = []
    for path, read in sorted(files.items()):
        now = _stamp(path)
        if path in seen and seen[path] == now:
            continue
        first = path not in seen
        seen[path] = now
        known = read - {""}
        if (known and known != {digest_of(path)}) or ("" in read and not first):
            changed.append(path)
    for gone in set(seen) - set(files):
        del seen[gone]
    return changed


async def watch(session: Session, interval: float = INTERVAL_S) -> None:
    """Poll the files the answers read, for as long as the server runs."""
    seen: dict[str, Stamp] = {}
    while True:
        await asyncio.sleep(interval)
        with contextlib.suppress(Exception):  # a watcher must never take the server down
            changed = changed_files(session.host.files_read(), seen)
            if changed:
                state_changes.files_saved(session, changed)

"""Derived inputs: a class gets the arguments it received inside a parent with inputs.

Nearest parents of the same file first, then their parents, then module classes of sibling
files (same folder) that import it. Recordings are cached per (file content, parent), keyed by
the parent's fingerprint so an edit elsewhere in the file keeps them.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Iterator

from torch_mlir_lens.discovery import ModuleInfo
from torch_mlir_lens.discovery.fingerprint import fingerprint
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.worker.inputs.construction import lookup
from torch_mlir_lens.worker.inputs.recording import Recorded, clone, record, weights_policy
from torch_mlir_lens.worker.inputs.result import ResolvedInputs
from torch_mlir_lens.worker.loading import loader
from torch_mlir_lens.worker.loading.file_states import read_source
from torch_mlir_lens.worker.process import WORKER

# Resolves a parent's inputs from its own sources only (no derived inputs): the precedence of
# `resolve.py`, passed in because that precedence is what asks for derived inputs.
ResolveOwn = Callable[
    [types.ModuleType, str, str, str, dict[str, str], str | None], ResolvedInputs,
]

_MAX_RECORDINGS = 16


def _recordings() -> BoundedCache[tuple[str, ...], dict[str, Recorded] | LensError]:
    """(path, parent's fingerprint, parent, settings, workspace, weights policy) → what the
    parent's submodules received."""
    return WORKER.cache(f"{__name__}.recordings", _MAX_RECORDINGS)


def _ancestors(info: ModuleInfo, by_name: dict[str, ModuleInfo]) -> Iterator[str]:
    """Parents first, then their parents (breadth first), each once."""
    queue, seen = list(info.parent_candidates), {info.name}
    while queue:
        parent = queue.pop(0)
        if parent in seen:
            continue
        seen.add(parent)
        yield parent
        if parent in by_name:
            queue.extend(by_name[parent].parent_candidates)


def derived_inputs(
    mod: types.ModuleType, name: str, info: ModuleInfo, by_name: dict[str, ModuleInfo], *,
    path: str, text: str, settings: dict[str, str], workspace: str | None,
    resolve_own: ResolveOwn,
) -> ResolvedInputs | None:
    """Inputs recorded inside a parent: this file's ancestors first, then sibling files'.

    `resolve_own` gives a parent its inputs (see `ResolveOwn`).
    """
    qualname = lookup(mod, name).__qualname__
    for parent in _ancestors(info, by_name):
        recording = _recording(mod, parent, path=path, text=text, settings=settings,
                               workspace=workspace, resolve_own=resolve_own)
        found = _pick(recording, qualname, path, parent)
        if found is not None:
            return found
    for entry in info.sibling_parents:
        fname, _, parent = entry.partition("::")
        sibling = os.path.join(os.path.dirname(path), fname)
        try:
            sib_text = _read_text(sibling)
            sib_mod = loader.load_definitions(sibling, sib_text)
        except LensError:
            continue
        recording = _recording(sib_mod, parent, path=sibling, text=sib_text, settings=settings,
                               workspace=workspace, resolve_own=resolve_own)
        found = _pick(recording, qualname, path, entry)
        if found is not None:
            return found
    return None


def _pick(recording: dict[str, Recorded] | LensError, qualname: str, path: str,
          parent: str) -> ResolvedInputs | None:
    """The recorded call of the class `qualname` defined in `path`, as resolved inputs."""
    if isinstance(recording, LensError):
        return None
    rec = recording.get(qualname)
    if rec is None or (rec.file is not None and os.path.abspath(rec.file) != path):
        return None
    init_args, init_kwargs = rec.init if rec.init is not None else ((), {})
    instance = rec.instance if rec.init is None else None
    how = " built without weights (shapes only)" if rec.shapes_only else ""
    return ResolvedInputs(
        clone(rec.args), clone(rec.kwargs), init_args, init_kwargs, None,
        f"derived:{parent}", f"recorded in one forward pass of {parent}{how}", instance,
    )


def _read_text(path: str) -> str:
    return read_source(path)  # bounded, regular files only; its digest recorded


def _recording(
    mod: types.ModuleType, parent: str, *, path: str, text: str, settings: dict[str, str],
    workspace: str | None, resolve_own: ResolveOwn,
) -> dict[str, Recorded] | LensError:
    """What each user class inside `parent` received at its first call (cached)."""
    # Keyed by the parent's fingerprint: an edit elsewhere in the file keeps the recording.
    fp = fingerprint(text, parent, path, settings_inputs=settings, workspace=workspace)
    key = (path, fp, parent, repr(sorted(settings.items())), workspace or "",
           str(weights_policy()))
    recordings = _recordings()
    if key in recordings:
        return recordings.get(key)  # type: ignore[return-value]
    try:
        resolved = resolve_own(mod, parent, path, text, settings, workspace)
        result: dict[str, Recorded] | LensError = record(mod, parent, resolved, path)
    except LensError as exc:
        result = exc
    recordings.put(key, result)
    return result

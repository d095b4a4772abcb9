"""Which frames of an op's call chain are library code, and what diagnostics say about them.

The rule: a frame is the **user's** when its file is one of the user files (`UserFiles`: the
file and its folder's loaded modules); it is **dropped** when its file belongs to torch itself
(`torch`, `torch_mlir`, `functorch`, `torchgen`), to the standard library, to Torch-MLIR Lens,
or is not a real `.py` path (`<string>`, generated code); every other frame is **library** code:
in practice third-party model code in site-packages such as `transformers`'
`modeling_llama.py`, but also a package elsewhere on `sys.path`. torch's own frames are
dropped because they are the same for every model (`torch/nn/modules/linear.py:134`) and say
nothing about it.
"""

from __future__ import annotations

import importlib.util
import os
import sysconfig
from collections.abc import Sequence
from typing import TYPE_CHECKING

from torch_mlir_lens.culprits import short_op
from torch_mlir_lens.frames import SourceFrame, short_path
from torch_mlir_lens.results import LensDiagnostic, RelatedLocation

if TYPE_CHECKING:  # locations.py imports this module
    from torch_mlir_lens.worker.locations import LocationResolver

_TORCH_PACKAGES = ("torch", "torch_mlir", "functorch", "torchgen", "torch_mlir_lens")
MAX_RELATED = 6  # library frames listed per chain
MAX_NAMED = 3  # library lines named in a message
ORIGIN = " comes from here"  # the related message of the frame that made the op


def _package_dirs(names: Sequence[str]) -> list[str]:
    dirs = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for loc in (spec.submodule_search_locations or []) if spec else []:
            dirs.append(os.path.realpath(loc))
    return dirs


def _stdlib_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib") if k in paths})


class LibraryFiles:
    """Classifies non-user files: library code, or dropped (torch, standard library, ...)."""

    def __init__(self) -> None:
        self._dropped = [d + os.sep for d in _package_dirs(_TORCH_PACKAGES)]
        # site-packages lives under the standard library's folder on some layouts: keep it.
        self._stdlib = [d + os.sep for d in _stdlib_dirs()]
        self._cache: dict[str, bool] = {}

    def is_library(self, file: str) -> bool:
        """Whether a frame in `file` (not a user file) is library code worth showing."""
        hit = self._cache.get(file)
        if hit is None:
            hit = self._classify(file)
            self._cache[file] = hit
        return hit

    def _classify(self, file: str) -> bool:
        if not file.endswith(".py") or not os.path.isabs(file):
            return False
        real = os.path.realpath(file)
        if any(real.startswith(d) for d in self._dropped):
            return False
        in_packages = f"{os.sep}site-packages{os.sep}" in real or (
            f"{os.sep}dist-packages{os.sep}" in real)
        return in_packages or not any(real.startswith(d) for d in self._stdlib)


_default: LibraryFiles | None = None


def library_files() -> LibraryFiles:
    """The process-wide classifier (package folders do not move while the worker runs)."""
    global _default
    if _default is None:
        _default = LibraryFiles()
    return _default


def related_frames(chain: Sequence[SourceFrame], op: str) -> list[RelatedLocation]:
    """The library frames inside the chain's innermost user frame, as related locations:
    where the op is made, then each library call on the way out to the user's line."""
    part: list[SourceFrame] = []
    for frame in chain:
        if not frame.library:
            break
        part.append(frame)
    out = []
    for i, frame in enumerate(part[:MAX_RELATED]):
        message = f"{op}{ORIGIN}" if i == 0 else "called from here"
        out.append(RelatedLocation(frame.file, frame.line, message))
    return out


def add_library_frames(diags: list[LensDiagnostic], locations: Sequence[tuple[str, str]],
                       resolver: LocationResolver) -> None:
    """Name the library lines behind unsupported-op diagnostics found inside library code.

    `locations` are the (op name, location text) of the ops found, in any number; each
    diagnostic of the same op at the same user line gets the library frames of every such
    op in `related` (several library lines may reach the backend through one user line), and
    its message names where the ops were made.
    """
    by_key: dict[tuple[str, str | None, int | None], list[RelatedLocation]] = {}
    for name, loc in locations:
        frames = resolver.user_frames(loc)
        key = (short_op(name), frames[0][0] if frames else None, frames[0][1] if frames else None)
        found = by_key.setdefault(key, [])
        for chain in resolver.full_chains(loc):
            for rel in related_frames(chain, name):
                if rel not in found:
                    found.append(rel)
    for d in diags:
        # A diagnostic names one cause: its primary op and the other ops of that cause.
        related = []
        for op in dict.fromkeys(short_op(o) for o in [d.op or "", *(d.ops or [])]):
            related += [r for r in by_key.get((op, d.file, d.line), []) if r not in related]
        if not related:
            continue
        d.related = list(related)
        origins = [f"{short_path(r.file)}:{r.line}" for r in related
                   if r.message.endswith(ORIGIN)][:MAX_NAMED]
        d.message = f"{d.message} (in {', '.join(origins)})"


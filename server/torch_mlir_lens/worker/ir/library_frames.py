"""Which frames of an op's call chain are library code (library_diags.py: what diagnostics say).

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

from torch_mlir_lens.worker.process import WORKER

_TORCH_PACKAGES = ("torch", "torch_mlir", "functorch", "torchgen", "torch_mlir_lens")


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


def library_files() -> LibraryFiles:
    """The worker's classifier (package folders do not move while the worker runs)."""
    return WORKER.part(LibraryFiles)

"""IREE's installation: its versions and its command-line tools, found without importing it.

    require(title)          → Install (versions, tool paths); LensError("missing-dependency")
                              saying what to install when IREE is absent
    run_tool(path, args)    → CompletedProcess (text, both streams captured)

The compiler (`iree-compile`) and the profiling tools run as child processes of the worker:
IREE's compiler carries its own MLIR and LLVM, which must never share a process with
torch-mlir's, and a crash of either is then the child's, reported as its output says. The
worker's time-out and memory limit cover them (they are in its process group). The runtime
(`iree.runtime`) is imported only where a compiled module runs (runtime.py).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import subprocess
from dataclasses import dataclass

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.rules.iree_targets import (
    COMPILER_DISTRIBUTION,
    IREE_DISTRIBUTIONS,
    missing_iree_message,
)

# Where each tool lives inside the `iree` namespace package.
_TOOL_FOLDERS = {
    "iree-compile": ("compiler", "_mlir_libs"),
    "iree-benchmark-module": ("_runtime_libs",),
    "iree-profile": ("_runtime_libs",),
}


@dataclass(frozen=True)
class Install:
    """The IREE the worker finds: its version and its tools."""

    version: str  # iree-base-compiler's
    tools: dict[str, str]  # name → absolute path

    def tool(self, name: str) -> str:
        """A tool's path; LensError("missing-dependency") if this installation lacks it."""
        path = self.tools.get(name)
        if path is None:
            raise LensError(ErrorKind.MISSING_DEPENDENCY,
                            f"IREE {self.version} has no `{name}` here: "
                            f"{missing_iree_message('this step', [name])}")
        return path


def versions() -> dict[str, str | None]:
    """The installed version of each IREE distribution (None: not installed)."""
    found: dict[str, str | None] = {}
    for dist in IREE_DISTRIBUTIONS:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = None
    return found


@functools.cache
def _package_folders() -> tuple[str, ...]:
    try:
        spec = importlib.util.find_spec("iree")  # a namespace package: nothing is imported
    except (ImportError, ValueError):  # a broken or shadowed installation: none
        return ()
    if spec is None or spec.submodule_search_locations is None:
        return ()
    return tuple(spec.submodule_search_locations)


def _find(name: str) -> str | None:
    for base in _package_folders():
        path = os.path.join(base, *_TOOL_FOLDERS[name], name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def require(title: str) -> Install:
    """IREE as installed for the worker's interpreter; LensError("missing-dependency")
    naming what to install when a distribution or its compiler is missing. `title` names
    what needs it in the message ("IREE CPU", "Verify on IREE CPU")."""
    found = versions()
    missing = [dist for dist, version in found.items() if version is None]
    tools = {name: path for name in _TOOL_FOLDERS if (path := _find(name)) is not None}
    if "iree-compile" not in tools and COMPILER_DISTRIBUTION not in missing:
        missing.append(f"{COMPILER_DISTRIBUTION}'s iree-compile")
    if missing:
        raise LensError(ErrorKind.MISSING_DEPENDENCY, missing_iree_message(title, missing))
    return Install(version=str(found[COMPILER_DISTRIBUTION]), tools=tools)


def run_tool(path: str, args: list[str], *, cwd: str | None = None,
             timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run an IREE tool; its output captured as text (undecodable bytes replaced)."""
    return subprocess.run([path, *args], capture_output=True, text=True, errors="replace",
                          cwd=cwd, timeout=timeout, check=False, stdin=subprocess.DEVNULL)


__all__ = ["Install", "require", "run_tool", "versions"]

"""The environment a lowering ran in, as one key: interpreter, torch, torch-mlir, IREE, this
package.

Part of every persistent cache key, so a result is never served to another interpreter, a
rebuilt torch or torch-mlir, or another version of this package. The package is keyed by the
content of its own files, not only its version number: an edited checkout is another build.
Read without importing torch (package metadata), in this process when the worker runs our own
interpreter, else by asking that interpreter once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import cache
from pathlib import Path

from torch_mlir_lens.system.reading import read_bytes
from torch_mlir_lens.system.safe_path import SAFE_PATH_FLAG

# The distributions every lowering depends on (IREE's: the IREE targets' results are its
# compiler's); libraries a module imports are checked per entry (worker/loading/provenance.py).
CORE_DISTRIBUTIONS = ("torch", "torch-mlir", "iree-base-compiler", "iree-base-runtime")

_VERSIONS_SCRIPT = (
    "import importlib.metadata as m, json, sys\n"
    "out = {}\n"
    "for d in sys.argv[1:]:\n"
    "    try: out[d] = m.version(d)\n"
    "    except m.PackageNotFoundError: out[d] = None\n"
    "print(json.dumps([sys.version, out]))\n"
)


@cache
def package_build() -> str:
    """sha256 of this package's Python files (names and contents)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(read_bytes(path))
    return digest.hexdigest()


def _same_interpreter(python: str) -> bool:
    try:
        return os.path.samefile(python, sys.executable)
    except OSError:
        return False


@cache
def _interpreter_facts(python: str) -> tuple[str, dict[str, str | None]] | None:
    """(Python version, {distribution: version}) of an interpreter; None when it cannot say."""
    import importlib.metadata  # both: computed at the first lookup, not at start-up
    import subprocess

    if _same_interpreter(python):
        versions: dict[str, str | None] = {}
        for dist in CORE_DISTRIBUTIONS:
            try:
                versions[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                versions[dist] = None
        return sys.version, versions
    try:
        done = subprocess.run(
            [python, SAFE_PATH_FLAG, "-c", _VERSIONS_SCRIPT, *CORE_DISTRIBUTIONS],
            capture_output=True, text=True, timeout=30, check=True)
        version, found = json.loads(done.stdout)
        return str(version), dict(found)
    except (OSError, subprocess.SubprocessError, ValueError, TypeError):
        return None


def environment_key(python: str) -> str | None:
    """The key of the environment a worker of `python` lowers in; None when unknown (then no
    persistent cache is used)."""
    facts = _interpreter_facts(python)
    if facts is None:
        return None
    version, dists = facts
    parts = {"python": os.path.realpath(python), "version": version, "dists": dists,
             "package": package_build()}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()

"""Shared fixtures for the Python tests: where things are, and a started Engine with small limits.

Keep this small and generic; suites in subfolders add their own conftest.py.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
# No persistent result cache unless a test asks for one: a test checks lowering, not what an
# earlier run (or the user's editor) left in the user's cache folder.
os.environ["TORCH_MLIR_LENS_CACHE_DIR"] = ""
# The shared harness (`tests.harness`) and the benchmark's report code (tested here) are
# imported from the checkout, as `python -m bench.run` does: the repository root goes first.
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return REPO_ROOT / "examples"


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """tests/models: small modules written for tests (faulty.py, ...)."""
    return REPO_ROOT / "tests" / "models"


@pytest.fixture
async def engine() -> AsyncIterator[object]:
    """A started Engine (20 s time-out, 1500 MB memory limit), stopped after the test."""
    from torch_mlir_lens.engine import Engine, EngineConfig

    eng = Engine(EngineConfig(python=sys.executable, timeout_s=20, memory_limit_mb=1500))
    await eng.start()
    try:
        yield eng
    finally:
        await eng.stop()

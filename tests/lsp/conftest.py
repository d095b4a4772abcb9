"""Fixtures of the language-server tests (helpers live in helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import copy_workspace


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This test module's own copy of the examples and the test fixtures."""
    return copy_workspace(tmp_path_factory.mktemp("ws"))

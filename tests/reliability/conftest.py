"""Fixtures for the reliability suite: fresh workspaces with the hostile modules, servers that
are always shut down and accounted for, and the checks every test ends with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .checks import cleanup, make_workspace
from .session import LensSession, SessionFactory


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def server_tmp(tmp_path: Path) -> Path:
    """The server's TMPDIR: a fresh folder, so anything written to "the temp dir" shows up."""
    path = tmp_path / "systmp"
    path.mkdir()
    return path


@pytest.fixture
def lens(workspace: Path, server_tmp: Path) -> Iterator[SessionFactory]:
    """Start servers on the test's workspace; every one is closed and its processes reaped."""
    sessions: list[LensSession] = []

    def start(**kwargs: Any) -> LensSession:
        kwargs.setdefault("tmpdir", server_tmp)
        session = LensSession(kwargs.pop("workspace", workspace), **kwargs)
        sessions.append(session)
        session.start()
        return session

    yield start
    for session in sessions:
        cleanup(session, marker=str(workspace))



"""Checks every reliability test ends with, and workspace set-up shared by the fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

from . import procs
from .session import LensSession

MODELS = Path(__file__).parent / "models"


def make_workspace(root: Path) -> Path:
    """A fresh folder holding a copy of every model file (sentinels land next to them)."""
    ws = root / "ws"
    shutil.copytree(MODELS, ws, ignore=shutil.ignore_patterns("__pycache__"))
    return ws.resolve()


def cleanup(session: LensSession, marker: str) -> None:
    """Close a session no matter what the test did, and kill what it left (only its own)."""
    session.close()
    procs.kill_all(session.leftover_processes())
    procs.kill_all(procs.marked(marker))


def finish(session: LensSession, marker: str | None = None, timeout: float = 20) -> None:
    """End a session the way an editor does and assert it ended cleanly:
    the server exits on shutdown+exit, and no process it (or a hostile module) started survives."""
    session.close(timeout)
    assert session.exited_in_time, "server did not exit after shutdown + exit"
    try:
        procs.wait_until(
            lambda: not session.leftover_processes(), timeout, "server's processes to end"
        )
    except procs.WaitTimeout:
        left = session.leftover_processes()
        raise AssertionError(f"processes left behind:\n{procs.describe(left)}") from None
    if marker is not None:
        try:
            procs.wait_until(lambda: not procs.marked(marker), timeout, "hostile children to end")
        except procs.WaitTimeout:
            left = set(procs.marked(marker))
            raise AssertionError(f"hostile children left behind:\n{procs.describe(left)}") from None


def assert_healthy(session: LensSession) -> None:
    """The server is running, never broke the protocol, and logged no traceback."""
    assert session.alive(), f"server died\n{session.health_report()}"
    assert session.client.error is None, f"protocol broken\n{session.health_report()}"
    assert not session.client.stderr_log.tracebacks, (
        "traceback on server stderr:\n" + session.client.stderr_log.tracebacks[0]
    )

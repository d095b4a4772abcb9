"""Process accounting: who the server spawned, what survived, and polling instead of sleeping.

Hostile modules start processes that may be re-parented to init once their parent dies, so
"descendants of the server" is not enough: every process a hostile module starts carries a
marker string in its command line (the test's own temporary directory), and `marked()` finds
them wherever they ended up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import psutil
from tests.harness.waiting import WaitTimeout, async_wait_until, wait_or_false, wait_until

# Waiting is the LSP harness's: one definition for the tests and the bench.
__all__ = ["WaitTimeout", "async_wait_until", "wait_or_false", "wait_until"]


def alive(pid: int) -> bool:
    """True when `pid` is a running (not zombie) process."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def descendants(pid: int) -> set[int]:
    """Live (non-zombie) descendants of `pid`, recursively; empty when `pid` is gone."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return set()
    return {p.pid for p in kids if alive(p.pid)}


def marked(marker: str) -> list[int]:
    """Live processes whose command line contains `marker` (hostile children, anywhere)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
        except psutil.Error:
            continue
        if marker in cmdline and alive(proc.pid):
            found.append(proc.pid)
    return found


def rss_mb(pid: int) -> float:
    """Resident memory of one process, in MiB."""
    return psutil.Process(pid).memory_info().rss / 2**20


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def describe(pids: Iterable[int]) -> str:
    """`pid: cmdline` lines, for assertion messages."""
    lines = []
    for pid in sorted(pids):
        try:
            lines.append(f"{pid}: {' '.join(psutil.Process(pid).cmdline())[:200]}")
        except psutil.Error:
            lines.append(f"{pid}: <gone>")
    return "\n".join(lines)


def kill_all(pids: Iterable[int]) -> None:
    """Last-resort cleanup of processes a failed test left behind (only ones it accounted)."""
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()

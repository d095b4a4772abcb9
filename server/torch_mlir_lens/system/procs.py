"""Process facts from /proc (Linux), without psutil: a worker's family and its memory.

A worker's "family" is its process group plus every descendant (a child that called setsid()
left the group but is still a descendant: the worker is a child subreaper, so even orphans of
double forks stay under it while it lives).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from torch_mlir_lens.system.reading import SYSTEM_FILE, read_bytes

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgrp: int
    state: str
    rss_bytes: int


def _read_stat(pid: str) -> ProcInfo | None:
    try:
        data = read_bytes(f"/proc/{pid}/stat", SYSTEM_FILE).decode("ascii", "replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses.
    fields = data[data.rfind(")") + 2:].split()
    if len(fields) < 22:
        return None
    # man 5 proc, counting from "state": [0] state, [1] ppid, [2] pgrp, [21] rss (pages).
    return ProcInfo(int(pid), int(fields[1]), int(fields[2]), fields[0], int(fields[21]) * _PAGE)


def is_running(pid: int) -> bool:
    """False once pid has died (a zombie, or reaped and gone); True when /proc cannot tell."""
    info = _read_stat(str(pid))
    if info is None:
        return not os.path.isdir("/proc/self")  # no /proc at all: assume it runs
    return info.state not in ("Z", "X")


def all_processes() -> list[ProcInfo]:
    """Every process visible in /proc (zombies included)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    procs = (_read_stat(e) for e in entries if e.isdigit())
    return [p for p in procs if p is not None]


def family(pid: int) -> list[ProcInfo]:
    """Live (non-zombie) processes in pid's process group or descending from pid."""
    procs = all_processes()
    children: dict[int, list[ProcInfo]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    members = {p.pid: p for p in procs if p.pgrp == pid}
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            if child.pid not in members:
                members[child.pid] = child
            stack.append(child.pid)
    for p in procs:
        if p.pid == pid:
            members[pid] = p
    return [p for p in members.values() if p.state != "Z"]


def family_pids(pid: int) -> list[int]:
    """Live pids of a worker's family (tests count them to prove nothing leaks)."""
    return sorted(p.pid for p in family(pid))


def _private_bytes(info: ProcInfo) -> int:
    """Memory only this process holds (/proc/PID/smaps_rollup: Private_*), else its RSS.

    A child the worker forks shares the worker's pages until it writes to them: its RSS counts
    them all again, its private memory only what it added."""
    try:
        text = read_bytes(f"/proc/{info.pid}/smaps_rollup", SYSTEM_FILE).decode("ascii",
                                                                                  "replace")
    except OSError:
        return info.rss_bytes
    total, found = 0, False
    for line in text.splitlines():
        if line.startswith(("Private_Clean:", "Private_Dirty:", "Private_Hugetlb:")):
            total += int(line.split()[1]) * 1024
            found = True
    return total if found else info.rss_bytes


@functools.cache
def _has_children_files() -> bool:
    """Whether the kernel lists a task's children in /proc (CONFIG_PROC_CHILDREN)."""
    return os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def _descendants(pid: int) -> list[ProcInfo]:
    """pid and its descendants, through /proc/PID/task/*/children: reads only the family,
    not every process on the machine."""
    found: list[ProcInfo] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        info = _read_stat(str(current))
        if info is None:
            continue
        found.append(info)
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = read_bytes(f"/proc/{current}/task/{task}/children", SYSTEM_FILE)
                stack.extend(int(c) for c in children.split())
            except OSError:  # the thread or process ended meanwhile
                continue
    return found


def family_rss_bytes(pid: int) -> int:
    """Resident memory of the worker and everything it spawned: the worker's RSS plus what
    each descendant holds of its own (a forked child's shared pages are counted once).

    Polled while every job runs, so it reads the descendants only: the worker is a child
    subreaper, so whatever it spawned (even after setsid or a double fork) descends from it."""
    members = _descendants(pid) if _has_children_files() else family(pid)
    return sum(p.rss_bytes if p.pid == pid else _private_bytes(p)
               for p in members if p.state != "Z")

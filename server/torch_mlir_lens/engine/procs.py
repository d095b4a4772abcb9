"""Process-group facts from /proc (Linux), without psutil: members and their memory."""

from __future__ import annotations

import os

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _stat_fields(pid: str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or parentheses.
    return data[data.rfind(")") + 2:].split()


def group_members(pgid: int) -> list[tuple[int, int]]:
    """[(pid, rss_bytes)] of the live (non-zombie) processes in process group pgid."""
    members: list[tuple[int, int]] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        # fields[0] = state, [2] = pgrp, [21] = rss in pages (man 5 proc, minus pid and comm).
        if fields is None or len(fields) < 22 or fields[2] != str(pgid) or fields[0] == "Z":
            continue
        members.append((int(entry), int(fields[21]) * _PAGE))
    return members


def group_pids(pgid: int) -> list[int]:
    """The live processes of a process group (tests count them to prove nothing leaks)."""
    return [pid for pid, _ in group_members(pgid)]


def group_rss_bytes(pgid: int) -> int:
    """Resident memory of a whole process group: the worker and everything it spawned."""
    return sum(rss for _, rss in group_members(pgid))

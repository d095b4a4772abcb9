"""One measurement in a forked child, so that a crash of torch-mlir (or a hang) ends the child,
not the sweep: its result comes back through a pipe as JSON.

    in_child(fn, *args, limit_s=None) → fn(*args), or None when the child died or ran out
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any


def in_child(fn: Any, *args: Any, limit_s: int | None = None) -> Any:
    """fn(*args) (a JSON-able result) in a forked child, under `limit_s` seconds when given
    (SIGALRM ends it); None when the child dies or runs out of time."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        if limit_s:
            signal.alarm(limit_s)
        try:
            data = json.dumps(fn(*args)).encode()
        except BaseException as exc:
            data = json.dumps({"child_error": repr(exc)[:300]}).encode()
        with os.fdopen(write, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    _pid, status = os.waitpid(pid, 0)
    return json.loads(data) if data and status == 0 else None


__all__ = ["in_child"]

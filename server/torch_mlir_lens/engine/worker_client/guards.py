"""What a job is guarded by and how its failures are worded: memory, time, crash.

The memory guard polls the worker family's RSS; a time-out asks the worker's faulthandler
where it hung; a crash is read from the faulthandler dump in the worker's stderr. Each names
the user's line when the stack has one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Callable

from torch_mlir_lens.engine.worker_client.channel import Worker
from torch_mlir_lens.engine.worker_client.spawn import signal_name
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.rules.job_phases import time_limit_message
from torch_mlir_lens.system.procs import family_rss_bytes

MEMORY_POLL_S = 0.1

_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def fault_frame(text: str, path: str | None) -> tuple[str | None, int | None, str]:
    """From a faulthandler dump in stderr: (file, line) of the innermost frame in `path`.

    Returns (None, None, summary line) when there is no dump or no frame in the user's file.
    """
    start = text.rfind("most recent call first")
    if start < 0:
        return None, None, _last_line(text)
    header_start = text.rfind("Fatal Python error", 0, start)
    summary = _last_line(text[header_start:start].split("\n\n")[0]) if header_start >= 0 else ""
    for line in text[start:].splitlines():
        match = _FRAME_LINE.match(line)
        if match and path and os.path.abspath(match["file"]) == os.path.abspath(path):
            return match["file"], int(match["line"]), summary or line.strip()
    return None, None, summary or _last_line(text)


async def watch_memory(worker: Worker, limit_mb: Callable[[], int]) -> int:
    """Return the group's RSS once it exceeds the limit (polls while the job runs)."""
    while True:
        limit = limit_mb() * (1 << 20)
        rss = family_rss_bytes(worker.pid)
        if limit > 0 and rss > limit:
            return rss
        await asyncio.sleep(MEMORY_POLL_S)


def memory_error(rss: int, limit_mb: int) -> LensError:
    """The error of a job stopped for its memory use."""
    return LensError(
        ErrorKind.MEMORY_LIMIT,
        f"the lowering used {rss // (1 << 20)} MB, over the memory limit of "
        f"{limit_mb} MB; the worker was restarted",
    )


async def where_hung(worker: Worker, path: str | None
                     ) -> tuple[str | None, int | None, str]:
    """Ask the worker's faulthandler for its stack (SIGUSR1) to say where a job hung: the
    user's file and line, and the dump (the phase it was in: `timeout_error`)."""
    before = len(worker.tails["stderr"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        tail = worker.tails["stderr"]
        if len(tail) != before and b"most recent call first" in tail[-8192:]:
            await asyncio.sleep(0.05)  # the rest of the dump follows within microseconds
            break
        await asyncio.sleep(0.02)
    dump = worker.tail_text()
    file, line, _ = fault_frame(dump, path)
    return file, line, dump


def timeout_error(timeout: float, file: str | None, line: int | None,
                  dump: str = "") -> LensError:
    """The error of a job stopped at its time-out, at the line it hung on if known, naming
    the phase that took the time as the worker's stack `dump` shows it (a Verify whose
    lowering took 0.5 s and whose JIT compile took the rest is not "the lowering")."""
    return LensError(ErrorKind.TIMEOUT, time_limit_message(timeout, dump, line),
                     file=file, line=line)


# The worker's in-process pass runners (worker/stages/pipeline.py, and culprits/op_isolation.py's
# for an op tried alone): a crash dump whose current thread holds one died inside a torch-mlir pass.
_IN_A_PASS = re.compile(
    r'torch_mlir_lens[/\\]worker[/\\](stages[/\\]pipeline\.py", line \d+ in _run_parsed|'
    r'culprits[/\\]op_isolation\.py", line \d+ in _errors)')


def crashed_in_a_pass(text: str) -> bool:
    """Whether a worker's stderr (its faulthandler dump) says it died in a torch-mlir pass."""
    start = text.rfind("most recent call first")
    return start >= 0 and bool(_IN_A_PASS.search(text[start:]))


def crash_error(worker: Worker, returncode: int | None, path: str | None) -> LensError:
    """The error of a worker that died (after it was reaped: its stderr is complete)."""
    file, line, last = fault_frame(worker.tail_text(), path)
    how = "crashed" if returncode is None or returncode < 0 else "exited"
    cause = signal_name(returncode) if returncode is not None else "channel closed"
    message = f"the worker {how} ({cause})"
    if line:
        message += f" at line {line}"
    if last:
        message += f": {last}"
    return LensError(ErrorKind.WORKER_CRASH, message + "; it was restarted",
                     file=file, line=line)

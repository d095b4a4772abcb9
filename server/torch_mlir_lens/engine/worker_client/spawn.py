"""Starting and ending worker processes (no torch): early spawn, asyncio spawn, kill.

The worker runs in its own process group (start_new_session) so that a time-out, a memory
overrun, a cancellation or stop() can kill it together with anything the user's code spawned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.system.cache_key import KEY_ENV
from torch_mlir_lens.system.procs import family_pids
from torch_mlir_lens.system.safe_path import SAFE_PATH_FLAG

log = logging.getLogger(__name__)

# RLIMIT_AS is only a backstop above the RSS limit: a torch process maps ~0.6 GB more than it
# touches, and a too-tight limit would turn ordinary work into allocation failures.
ADDRESS_SPACE_SLACK_MB = 2048


class AdoptedProcess:
    """A worker spawned with `subprocess.Popen` before any event loop ran (`spawn_early`).

    Offers the part of `asyncio.subprocess.Process` the client uses; its output pipes are
    attached to the running loop at adoption.
    """

    WAIT_POLL_S = 0.05

    def __init__(self, popen: subprocess.Popen[bytes], stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader) -> None:
        self._popen = popen
        self.stdout: asyncio.StreamReader | None = stdout
        self.stderr: asyncio.StreamReader | None = stderr

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    async def wait(self) -> int:
        # Polled: Popen has no loop-aware wait, and a thread per wait could pile up.
        while (code := self._popen.poll()) is None:
            await asyncio.sleep(self.WAIT_POLL_S)
        return code

    def kill(self) -> None:
        self._popen.kill()


WorkerProcess = asyncio.subprocess.Process | AdoptedProcess


@dataclass
class EarlyWorker:
    """A worker spawned first thing in `serve` (before pygls is imported), to be adopted.

    It only imports torch and warms up until a job arrives: no user code runs in it, so it
    may start before the client says whether the workspace is trusted (`discard` if not).
    """

    popen: subprocess.Popen[bytes]
    to_worker: int  # our write end of the job pipe
    from_worker: int  # our read end of the reply pipe

    @property
    def pid(self) -> int:
        return self.popen.pid

    def discard(self) -> None:
        """Kill it (its own process group) and reap it; close our pipe ends."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(5.0)
        for fd in (self.to_worker, self.from_worker):
            with contextlib.suppress(OSError):
                os.close(fd)
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()


def signal_name(returncode: int) -> str:
    """`SIGKILL`, `signal 99` or `exit code 3`."""
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def worker_env(env: dict[str, str] | None) -> dict[str, str]:
    """The worker's environment: `env` (default ours) plus what the worker relies on."""
    out = dict(os.environ if env is None else env)
    # The cache key a CI secret gives stays with the engine: the worker runs the code under
    # check, which must not read it (the worker's traced blocks use this user's own key file).
    out.pop(KEY_ENV, None)
    out["PYTHONUNBUFFERED"] = "1"
    out["PYTHONFAULTHANDLER"] = "1"  # a segfault names its line on stderr
    out["TORCH_MLIR_LENS_OWN_GROUP"] = "1"
    out["TORCH_MLIR_LENS_PARENT_PID"] = str(os.getpid())  # it ends itself when we are gone
    return out


def worker_argv(python: str, in_fd: int, out_fd: int) -> list[str]:
    """The worker's command line, its channel on the given fds."""
    # -P: nothing is imported from the working directory (system/safe_path.py); a job's own
    # folders go on sys.path for that job only (worker/job_handlers.py).
    return [python, SAFE_PATH_FLAG, "-m", "torch_mlir_lens.worker.main", "--in-fd", str(in_fd),
            "--out-fd", str(out_fd)]


async def stream_of(loop: asyncio.AbstractEventLoop, pipe: Any) -> asyncio.StreamReader:
    """An asyncio reader of a pipe opened outside the loop (an early worker's output)."""
    stream = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    return stream


def spawn_early(python: str = sys.executable) -> EarlyWorker | None:
    """Spawn a worker without an event loop; None when it cannot start (spawned later)."""
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    try:
        popen = subprocess.Popen(
            worker_argv(python, to_worker_r, from_worker_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(to_worker_r, from_worker_w), start_new_session=True,
            env=worker_env(None),
        )
    except OSError as exc:
        log.warning("could not spawn the worker early: %s", exc)
        for fd in (to_worker_w, from_worker_r):
            os.close(fd)
        return None
    finally:
        for fd in (to_worker_r, from_worker_w):
            os.close(fd)
    return EarlyWorker(popen, to_worker_w, from_worker_r)


async def adopt_early(early: EarlyWorker) -> AdoptedProcess:
    """The asyncio side of a worker spawned before the event loop."""
    loop = asyncio.get_running_loop()
    popen = early.popen
    assert popen.stdout is not None and popen.stderr is not None
    return AdoptedProcess(popen, await stream_of(loop, popen.stdout),
                          await stream_of(loop, popen.stderr))


async def spawn(python: str, env: dict[str, str] | None,
                cwd: str | None) -> tuple[asyncio.subprocess.Process, int, int]:
    """Start a worker → (process, our read end of its replies, our write end of its jobs)."""
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *worker_argv(python, to_worker_r, from_worker_w),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=(to_worker_r, from_worker_w),
            start_new_session=True,  # own process group: kill it all at once
            env=worker_env(env),
            cwd=cwd,
        )
    except OSError as exc:
        for fd in (to_worker_r, to_worker_w, from_worker_r, from_worker_w):
            os.close(fd)
        raise LensError(ErrorKind.WORKER_CRASH,
                        f"cannot start the worker with {python}: {exc}") from exc
    finally:
        # The child has its copies; ours would keep the pipes open after it dies.
        for fd in (to_worker_r, from_worker_w):
            with contextlib.suppress(OSError):
                os.close(fd)
    return proc, from_worker_r, to_worker_w


def set_address_limit(pid: int, memory_limit_mb: int) -> None:
    """A hard backstop on the worker's address space, above the polled RSS limit."""
    if memory_limit_mb <= 0 or not hasattr(resource, "prlimit"):
        return
    soft = (memory_limit_mb + ADDRESS_SPACE_SLACK_MB) * (1 << 20)
    with contextlib.suppress(OSError, ValueError):
        _, hard = resource.prlimit(pid, resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.prlimit(pid, resource.RLIMIT_AS, (soft, hard))


def kill_unreaped(proc: WorkerProcess) -> None:
    """SIGKILL a worker that has not been reaped, without reaping it.

    An asyncio process has one reaper, asyncio's child watcher; `Popen.kill` polls (waitpid)
    before signalling and would reap a worker that just died, and the watcher then logs
    "Unknown child process pid N" on the user's stderr. An adopted worker's `returncode`
    polls its own Popen, its one reaper."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(proc.pid, signal.SIGKILL)


async def kill_family(pid: int) -> None:
    """SIGKILL a worker, its process group and all its descendants, until none is left.

    Everyone is stopped first (SIGSTOP) so nobody can fork a new member while we collect them.
    """
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        members = family_pids(pid)
        if not members:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for member in family_pids(pid) if sig == signal.SIGKILL else members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(member, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        await asyncio.sleep(0.02)

"""Caller side of the worker process: spawn, send a job, guard it, restart on failure.

No torch here: this runs in the language server and the CLI. The worker runs in its own process
group (start_new_session) so that a time-out, a memory overrun, a cancellation or stop() can kill
it together with anything the user's code spawned. Every failure comes back as a LensError of
its own kind and the next request gets a fresh worker.

Channel: two dedicated pipes (pass_fds), frames of a 4-byte big-endian length + UTF-8 JSON.
The worker's stdout and stderr are separate pipes that are drained continuously (the last
~64 KB of each are kept for error messages), so user prints can neither block the worker nor
corrupt the channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import re
import resource
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.engine.procs import family_pids, family_rss_bytes, is_running
from torch_mlir_lens.results import ErrorKind, LensError

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">I")
TAIL_BYTES = 64 * 1024
MEMORY_POLL_S = 0.1
STARTUP_TIMEOUT_S = 180.0  # importing torch on a loaded machine can be slow
# RLIMIT_AS is only a backstop above the RSS limit: a torch process maps ~0.6 GB more than it
# touches, and a too-tight limit would turn ordinary work into allocation failures.
ADDRESS_SPACE_SLACK_MB = 2048

OutputCallback = Callable[[str, str], None]  # (stream name "stdout" | "stderr", text)


class _AdoptedProcess:
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


def _worker_env(env: dict[str, str] | None) -> dict[str, str]:
    out = dict(os.environ if env is None else env)
    out["PYTHONUNBUFFERED"] = "1"
    out["PYTHONFAULTHANDLER"] = "1"  # a segfault names its line on stderr
    out["TORCH_MLIR_LENS_OWN_GROUP"] = "1"
    return out


def _worker_argv(python: str, in_fd: int, out_fd: int) -> list[str]:
    return [python, "-m", "torch_mlir_lens.worker.main", "--in-fd", str(in_fd),
            "--out-fd", str(out_fd)]


async def _stream_of(loop: asyncio.AbstractEventLoop, pipe: Any) -> asyncio.StreamReader:
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
            _worker_argv(python, to_worker_r, from_worker_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(to_worker_r, from_worker_w), start_new_session=True,
            env=_worker_env(None),
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


@dataclass
class _Worker:
    """One worker process and its pipes."""

    proc: asyncio.subprocess.Process | _AdoptedProcess
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    started: float
    ready: asyncio.Future[dict[str, Any]]
    tails: dict[str, bytearray] = field(default_factory=lambda: {"stdout": bytearray(),
                                                               "stderr": bytearray()})
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    busy: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail_text(self, stream: str = "stderr") -> str:
        return bytes(self.tails[stream]).decode("utf-8", "replace")


def _signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit code {returncode}"


def _ready_ok(worker: _Worker) -> bool:
    ready = worker.ready
    return ready.done() and not ready.cancelled() and ready.exception() is None


_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _fault_frame(text: str, path: str | None) -> tuple[str | None, int | None, str]:
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


async def _kill_family(pid: int) -> None:
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


class WorkerClient:
    """Runs jobs in a worker process, one at a time, with a time-out and a memory limit.

    `timeout_s` and `memory_limit_mb` may be changed at any time; they apply to the next job
    (the memory limit also to the running one).
    """

    def __init__(
        self,
        python: str = sys.executable,
        *,
        timeout_s: float = 60.0,
        memory_limit_mb: int = 8192,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        on_output: OutputCallback | None = None,
        early: EarlyWorker | None = None,
    ) -> None:
        """`early`: a worker spawned before the event loop, used as the first worker."""
        self.python = python
        self.timeout_s = timeout_s
        self._memory_limit_mb = memory_limit_mb
        self.env = env
        self.cwd = cwd
        self.on_output = on_output
        self.restarts = 0  # workers started after the first (crash, time-out, cancel, ...)
        self._worker: _Worker | None = None
        self._lock = asyncio.Lock()
        # Spawning awaits; without this two callers could each start a worker (one leaks).
        self._spawn_lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._cancel_event: asyncio.Event | None = None
        self._spawns = 0
        self._stopped = False
        self._early = early

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Spawn the worker; returns at once, the worker imports torch in the background."""
        self._stopped = False
        await self._ensure_worker()

    async def wait_ready(self, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Wait until the worker has finished its imports (spawns one if needed)."""
        worker = await self._ensure_worker()
        await asyncio.wait_for(asyncio.shield(worker.ready), timeout)

    @property
    def pid(self) -> int | None:
        """The current worker's pid (also its process-group id), if one is running."""
        worker = self._worker
        return worker.pid if worker and worker.proc.returncode is None else None

    @property
    def busy(self) -> bool:
        """True while a job runs in the worker."""
        return bool(self._worker and self._worker.busy)

    @property
    def ready(self) -> bool:
        """True when a warm worker is waiting for a job."""
        worker = self._worker
        return bool(worker and _ready_ok(worker) and worker.proc.returncode is None)

    @property
    def memory_limit_mb(self) -> int:
        return self._memory_limit_mb

    @memory_limit_mb.setter
    def memory_limit_mb(self, value: int) -> None:
        self._memory_limit_mb = value
        if self._worker and self._worker.proc.returncode is None:
            self._set_rlimit(self._worker.pid)

    async def stop(self) -> None:
        """Stop the worker and everything in its process group; reap it. Idempotent."""
        self._stopped = True
        early, self._early = self._early, None
        if early is not None:  # never adopted
            early.discard()
        if self._cancel_event is not None:
            self._cancel_event.set()
        worker, self._worker = self._worker, None
        if worker is not None:
            await self._kill(worker)

    async def cancel(self) -> bool:
        """Abort the current request; False when there is none.

        A job running in the worker is killed (and the worker restarted); a request still
        waiting for the worker to warm up is simply dropped. It raises LensError("cancelled").
        """
        if self._cancel_event is None or self._cancel_event.is_set():
            return False
        self._cancel_event.set()
        return True

    # --- requests ----------------------------------------------------------------------------

    async def request(self, job: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Run one job; return its `result` dict or raise LensError.

        The time-out (default `timeout_s`) counts from when a warm worker got the job, not the
        worker's start-up. If the calling task is cancelled mid-job, the worker is killed and
        restarted (its reply would otherwise arrive for nobody).
        """
        async with self._lock:
            self._stopped = False  # a request after stop() starts a worker again
            self._cancel_event = cancel_event = asyncio.Event()
            try:
                worker = await self._ensure_worker()
                await self._await_ready(worker, cancel_event)
                job = {**job, "id": next(self._ids)}
                worker.busy = True
                try:
                    return await self._run(worker, job, timeout or self.timeout_s, cancel_event)
                finally:
                    worker.busy = False
            finally:
                self._cancel_event = None

    async def _run(
        self, worker: _Worker, job: dict[str, Any], timeout: float, cancel_event: asyncio.Event,
    ) -> dict[str, Any]:
        try:
            body = json.dumps(job, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise LensError(ErrorKind.BAD_REQUEST, f"job is not JSON: {exc}") from exc
        reply_task = asyncio.ensure_future(self._send_and_read(worker, body, job["id"]))
        exit_task = asyncio.ensure_future(worker.proc.wait())
        memory_task = asyncio.ensure_future(self._watch_memory(worker))
        cancel_task = asyncio.ensure_future(cancel_event.wait())
        guards = {reply_task, exit_task, memory_task, cancel_task}
        try:
            done, _ = await asyncio.wait(guards, timeout=timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._replace(worker)
            raise
        finally:
            for task in guards:
                if not task.done():
                    task.cancel()
            # Retrieve exceptions so asyncio does not log them as never retrieved.
            for task in guards:
                if task.done() and not task.cancelled():
                    task.exception()

        if reply_task in done and reply_task.exception() is None:
            reply = reply_task.result()
            error = reply.get("error") or {}
            if reply.get("restart") or error.get("kind") == ErrorKind.MEMORY_LIMIT:
                # The worker could not clean up after the user's code (threads left running),
                # or an allocation hit the address-space backstop: start clean.
                log.info("replacing the worker: %s", reply.get("restart") or error["kind"])
                await self._replace(worker)
            if reply.get("ok"):
                result = reply.get("result")
                return result if isinstance(result, dict) else {}
            raise LensError.from_json(reply.get("error") or {"kind": ErrorKind.LOWERING_ERROR,
                                                             "message": "job failed"})
        if cancel_task in done:
            await self._replace(worker)
            raise LensError(ErrorKind.CANCELLED, "cancelled; the worker was restarted")
        if memory_task in done:
            rss = memory_task.result()
            await self._replace(worker)
            raise LensError(
                ErrorKind.MEMORY_LIMIT,
                f"the lowering used {rss // (1 << 20)} MB, over the memory limit of "
                f"{self.memory_limit_mb} MB; the worker was restarted",
            )
        if not done:
            file, line = await self._where_hung(worker, job.get("path"))
            await self._replace(worker)
            raise LensError(
                ErrorKind.TIMEOUT,
                f"the lowering took longer than {timeout:g} s and was stopped"
                + (f" (at line {line})" if line else "") + "; the worker was restarted",
                file=file, line=line,
            )
        # The reply stream ended or the process exited: a crash.
        raise await self._crash_error(worker, job.get("path"))

    async def _send_and_read(self, worker: _Worker, body: bytes, job_id: int) -> dict[str, Any]:
        worker.writer.write(_HEADER.pack(len(body)) + body)
        await worker.writer.drain()
        while True:
            reply = await self._read_frame(worker)
            if reply.get("id") == job_id:
                return reply
            log.debug("dropping a stale worker reply %r", reply.get("id"))

    @staticmethod
    async def _read_frame(worker: _Worker) -> dict[str, Any]:
        header = await worker.reader.readexactly(_HEADER.size)
        (size,) = _HEADER.unpack(header)
        data = json.loads((await worker.reader.readexactly(size)).decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("worker sent a frame that is not an object")
        return data

    # --- guards ------------------------------------------------------------------------------

    async def _watch_memory(self, worker: _Worker) -> int:
        """Return the group's RSS once it exceeds the limit (polls while the job runs)."""
        while True:
            limit = self.memory_limit_mb * (1 << 20)
            rss = family_rss_bytes(worker.pid)
            if limit > 0 and rss > limit:
                return rss
            await asyncio.sleep(MEMORY_POLL_S)

    async def _where_hung(self, worker: _Worker, path: str | None) -> tuple[str | None, int | None]:
        """Ask the worker's faulthandler for its stack (SIGUSR1) to say where a job hung."""
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
        text = worker.tail_text()
        file, line, _ = _fault_frame(text, path)
        return file, line

    async def _crash_error(self, worker: _Worker, path: str | None) -> LensError:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(worker.proc.wait(), 2.0)
        returncode = worker.proc.returncode
        await self._replace(worker)  # kills the group: the drains then see EOF
        file, line, last = _fault_frame(worker.tail_text(), path)
        how = "crashed" if returncode is None or returncode < 0 else "exited"
        cause = _signal_name(returncode) if returncode is not None else "channel closed"
        message = f"the worker {how} ({cause})"
        if line:
            message += f" at line {line}"
        if last:
            message += f": {last}"
        return LensError(ErrorKind.WORKER_CRASH, message + "; it was restarted",
                         file=file, line=line)

    # --- processes ---------------------------------------------------------------------------

    async def _ensure_worker(self) -> _Worker:
        async with self._spawn_lock:
            worker = self._worker
            # returncode is only set once the event loop has reaped the process: a worker
            # killed from outside an instant ago would still take the job, and fail it.
            if worker is None or worker.proc.returncode is not None or not is_running(
                    worker.pid):
                if worker is not None:
                    await self._kill(worker)
                early, self._early = self._early, None
                worker = await (self._adopt(early) if early else self._spawn())
            return worker

    async def _await_ready(self, worker: _Worker,
                           cancel_event: asyncio.Event | None = None) -> None:
        exit_task: asyncio.Future[Any] = asyncio.ensure_future(worker.proc.wait())
        waits: set[asyncio.Future[Any]] = {worker.ready, exit_task}
        cancel_task: asyncio.Future[Any] | None = None
        if cancel_event is not None:
            cancel_task = asyncio.ensure_future(cancel_event.wait())
            waits.add(cancel_task)
        try:
            done, _ = await asyncio.wait(waits, timeout=STARTUP_TIMEOUT_S,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            exit_task.cancel()
            if cancel_task is not None:
                cancel_task.cancel()
        if _ready_ok(worker):
            return
        if cancel_task is not None and cancel_task in done:
            # Cancelled before the job was sent: the warming worker stays as it is.
            raise LensError(ErrorKind.CANCELLED, "cancelled before it started")
        if not done:
            await self._replace(worker)
            raise LensError(ErrorKind.TIMEOUT,
                            f"the worker did not start within {STARTUP_TIMEOUT_S:g} s")
        raise await self._crash_error(worker, None)

    async def _adopt(self, early: EarlyWorker) -> _Worker:
        """Take over a worker spawned before the event loop (it has been warming up since)."""
        loop = asyncio.get_running_loop()
        popen = early.popen
        assert popen.stdout is not None and popen.stderr is not None
        proc = _AdoptedProcess(popen, await _stream_of(loop, popen.stdout),
                               await _stream_of(loop, popen.stderr))
        self._set_rlimit(proc.pid)
        log.info("worker %d adopted (spawned before the server started)", proc.pid)
        return await self._attach(proc, early.from_worker, early.to_worker)

    async def _spawn(self) -> _Worker:
        to_worker_r, to_worker_w = os.pipe()
        from_worker_r, from_worker_w = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *_worker_argv(self.python, to_worker_r, from_worker_w),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(to_worker_r, from_worker_w),
                start_new_session=True,  # own process group: kill it all at once
                env=_worker_env(self.env),
                cwd=self.cwd,
            )
        except OSError as exc:
            for fd in (to_worker_r, to_worker_w, from_worker_r, from_worker_w):
                os.close(fd)
            raise LensError(ErrorKind.WORKER_CRASH,
                            f"cannot start the worker with {self.python}: {exc}") from exc
        finally:
            # The child has its copies; ours would keep the pipes open after it dies.
            for fd in (to_worker_r, from_worker_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._set_rlimit(proc.pid)
        log.info("worker %d started", proc.pid)
        return await self._attach(proc, from_worker_r, to_worker_w)

    async def _attach(self, proc: asyncio.subprocess.Process | _AdoptedProcess,
                      from_worker_r: int, to_worker_w: int) -> _Worker:
        """Connect the channel and the output drains of a started worker process."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                     os.fdopen(from_worker_r, "rb", buffering=0))
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(to_worker_w, "wb", buffering=0))
        writer = asyncio.StreamWriter(transport, protocol, None, loop)

        worker = _Worker(proc=proc, reader=reader, writer=writer, started=time.monotonic(),
                         ready=loop.create_future())
        assert proc.stdout is not None and proc.stderr is not None
        worker.tasks.append(asyncio.ensure_future(self._drain(worker, "stdout", proc.stdout)))
        worker.tasks.append(asyncio.ensure_future(self._drain(worker, "stderr", proc.stderr)))
        worker.tasks.append(asyncio.ensure_future(self._read_ready(worker)))
        if self._spawns:
            self.restarts += 1
        self._spawns += 1
        self._worker = worker
        return worker

    async def _read_ready(self, worker: _Worker) -> None:
        try:
            frame = await self._read_frame(worker)
        except Exception as exc:  # EOF: the worker died while importing
            if not worker.ready.done():
                worker.ready.set_exception(exc)
                worker.ready.exception()  # mark retrieved; requests look at the process
            return
        if not worker.ready.done():
            worker.ready.set_result(frame.get("result") or {})

    async def _drain(self, worker: _Worker, name: str, stream: asyncio.StreamReader) -> None:
        tail = worker.tails[name]
        while True:
            try:
                chunk = await stream.read(1 << 16)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            tail += chunk
            if len(tail) > TAIL_BYTES:
                del tail[: len(tail) - TAIL_BYTES]
            if self.on_output is not None:
                with contextlib.suppress(Exception):
                    self.on_output(name, chunk.decode("utf-8", "replace"))

    def _set_rlimit(self, pid: int) -> None:
        """A hard backstop on the worker's address space, above the polled RSS limit."""
        if self.memory_limit_mb <= 0 or not hasattr(resource, "prlimit"):
            return
        soft = (self.memory_limit_mb + ADDRESS_SPACE_SLACK_MB) * (1 << 20)
        with contextlib.suppress(OSError, ValueError):
            _, hard = resource.prlimit(pid, resource.RLIMIT_AS)
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.prlimit(pid, resource.RLIMIT_AS, (soft, hard))

    async def _replace(self, worker: _Worker) -> None:
        """Kill a worker that failed and start the next one warming (unless stopped)."""
        await self._kill(worker)
        if self._worker is worker:
            self._worker = None
        if not self._stopped and self._worker is None:
            try:
                await self._ensure_worker()
            except LensError as exc:
                log.error("cannot restart the worker: %s", exc.message)

    async def _kill(self, worker: _Worker) -> None:
        """End a worker with its process group and descendants; reap it.

        No graceful EOF first: the worker holds nothing worth saving, and once it exits on its
        own, descendants that left its group are re-parented out of reach.
        """
        proc = worker.proc
        await _kill_family(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), 5.0)
        with contextlib.suppress(Exception):
            worker.writer.close()
        for task in worker.tasks:
            if not task.done():
                # Let the drains read what is left (the last stderr line) before stopping them.
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(task), 0.5)
                task.cancel()
        if not worker.ready.done():
            worker.ready.cancel()
        log.info("worker %d stopped (%s)", proc.pid,
                 _signal_name(proc.returncode) if proc.returncode is not None else "?")

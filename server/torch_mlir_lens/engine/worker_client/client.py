"""`WorkerClient`: run jobs in a worker process, one at a time, guarded; restart on failure.

No torch here: this runs in the language server and the CLI. Every failure comes back as a
LensError of its own kind and the next request gets a fresh worker. Spawning is `spawn.py`,
the pipes `channel.py`, the limits and their wording `guards.py`.

One crash is answered otherwise: a worker that died inside a torch-mlir pass (its crash dump
says so). The next worker then runs its passes in forked children (`GUARD_PASSES_ENV`,
worker/ir/crash_guard.py), and the job runs once more there, where the crash becomes a
diagnostic at the op's line and the other targets answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
from typing import Any

from torch_mlir_lens import defaults
from torch_mlir_lens.engine.worker_client import channel, guards, spawn
from torch_mlir_lens.engine.worker_client.channel import OutputCallback, Worker
from torch_mlir_lens.engine.worker_client.spawn import EarlyWorker
from torch_mlir_lens.protocol import framing
from torch_mlir_lens.protocol.jobs import Reply
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.system.procs import is_running

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 180.0  # importing torch on a loaded machine can be slow
GUARD_PASSES_ENV = "TORCH_MLIR_LENS_GUARD_PASSES"  # as worker/ir/crash_guard.py reads it


class WorkerClient:
    """Runs jobs in a worker process, one at a time, with a time-out and a memory limit.

    `timeout_s` and `memory_limit_mb` may be changed at any time; they apply to the next job
    (the memory limit also to the running one).
    """

    def __init__(
        self,
        python: str = sys.executable,
        *,
        timeout_s: float = defaults.TIMEOUT_S,
        memory_limit_mb: int = defaults.MEMORY_LIMIT_MB,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        on_output: OutputCallback | None = None,
    ) -> None:
        self.python = python
        self.timeout_s = timeout_s
        self._memory_limit_mb = memory_limit_mb
        self.env = env
        self.cwd = cwd
        self.on_output = on_output
        self.restarts = 0  # workers started after the first (crash, time-out, cancel, ...)
        self._worker: Worker | None = None
        self._lock = asyncio.Lock()
        # Spawning awaits; without this two callers could each start a worker (one leaks).
        self._spawn_lock = asyncio.Lock()
        self._ids = itertools.count(1)
        self._cancel_event: asyncio.Event | None = None
        self._spawns = 0
        self._stopped = False
        self._early: EarlyWorker | None = None
        # The exported programs the current worker said it holds (its last reply).
        self._programs: frozenset[str] = frozenset()
        # A torch-mlir pass killed a worker: from then on, workers run their passes forked.
        self._guard_passes = False
        self._pass_crashed = False  # the last job's worker died inside a pass

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
        return bool(worker and worker.is_ready and worker.proc.returncode is None)

    @property
    def programs(self) -> frozenset[str]:
        """Keys (`protocol.programs.program_key`) of the programs the worker holds exported."""
        return self._programs

    @property
    def memory_limit_mb(self) -> int:
        return self._memory_limit_mb

    @memory_limit_mb.setter
    def memory_limit_mb(self, value: int) -> None:
        self._memory_limit_mb = value
        if self._worker and self._worker.proc.returncode is None:
            spawn.set_address_limit(self._worker.pid, value)

    def prespawn(self, early: EarlyWorker | None = None) -> int | None:
        """Spawn the first worker now (or take `early`, spawned before us), without an event
        loop; its pid, or None when it could not start (it is spawned later)."""
        if self._early is None and self._worker is None:
            self._early = early or spawn.spawn_early(self.python)
        elif early is not None:
            early.discard()
        return self._early.pid if self._early is not None else None

    def discard_prespawned(self) -> None:
        """Kill a prespawned worker no job has used yet (no user code ever ran in it)."""
        early, self._early = self._early, None
        if early is not None:
            log.info("stopping the prespawned worker %d", early.pid)
            early.discard()

    async def stop(self) -> None:
        """Stop the worker and everything in its process group; reap it. Idempotent."""
        self._stopped = True
        self.discard_prespawned()
        if self._cancel_event is not None:
            self._cancel_event.set()
        worker, self._worker = self._worker, None
        if worker is not None:
            await self._kill(worker)

    async def cancel(self) -> bool:
        """Abort the current request; False when there is none.

        A job running in the worker is killed (and the worker restarted); a request still
        waiting for the worker to warm up is dropped. It raises LensError("cancelled")."""
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
                for attempt in (1, 2):
                    worker = await self._ensure_worker()
                    await self._await_ready(worker, cancel_event)
                    sent = {**job, "id": next(self._ids)}
                    worker.busy = True
                    self._pass_crashed = False
                    try:
                        return await self._run(worker, sent, timeout or self.timeout_s,
                                               cancel_event)
                    except LensError:
                        # Killed by a torch-mlir pass: once more, on a worker guarding them.
                        if attempt == 2 or not self._pass_crashed:
                            raise
                    finally:
                        worker.busy = False
                raise AssertionError("unreachable")  # pragma: no cover
            finally:
                self._cancel_event = None

    async def _run(
        self, worker: Worker, job: dict[str, Any], timeout: float, cancel_event: asyncio.Event,
    ) -> dict[str, Any]:
        try:
            frame = framing.encode(job)
        except (TypeError, ValueError) as exc:
            raise LensError(ErrorKind.BAD_REQUEST, f"job is not JSON: {exc}") from exc
        reply_task = asyncio.ensure_future(worker.exchange(frame, job["id"]))
        exit_task = asyncio.ensure_future(worker.proc.wait())
        memory_task = asyncio.ensure_future(
            guards.watch_memory(worker, lambda: self.memory_limit_mb))
        cancel_task = asyncio.ensure_future(cancel_event.wait())
        tasks = {reply_task, exit_task, memory_task, cancel_task}
        try:
            done, _ = await asyncio.wait(tasks, timeout=timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._replace(worker)
            raise
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            # Retrieve exceptions so asyncio does not log them as never retrieved.
            for task in tasks:
                if task.done() and not task.cancelled():
                    task.exception()

        if reply_task in done and reply_task.exception() is None:
            return await self._result(worker, reply_task.result())
        if cancel_task in done:
            await self._replace(worker)
            raise LensError(ErrorKind.CANCELLED, "cancelled; the worker was restarted")
        if memory_task in done:
            await self._replace(worker)
            raise guards.memory_error(memory_task.result(), self.memory_limit_mb)
        if not done:
            file, line, dump = await guards.where_hung(worker, job.get("path"))
            await self._replace(worker)
            raise guards.timeout_error(timeout, file, line, dump)
        # The reply stream ended or the process exited: a crash.
        raise await self._crash_error(worker, job.get("path"))

    async def _result(self, worker: Worker, frame: dict[str, Any]) -> dict[str, Any]:
        """The result of a reply, or its error raised; replaces the worker when it asks."""
        reply = Reply.from_json(frame)
        self._programs = frozenset(reply.programs)
        error = reply.error or {}
        if reply.restart or error.get("kind") == ErrorKind.MEMORY_LIMIT:
            # The worker could not clean up after the user's code (threads left running),
            # or an allocation hit the address-space backstop: start clean.
            log.info("replacing the worker: %s", reply.restart or error["kind"])
            await self._replace(worker)
        if reply.ok:
            return reply.result or {}
        raise LensError.from_json(reply.error or {"kind": ErrorKind.LOWERING_ERROR,
                                                  "message": "job failed"})

    async def _crash_error(self, worker: Worker, path: str | None) -> LensError:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(worker.proc.wait(), 2.0)
        returncode = worker.proc.returncode
        await self._kill(worker)  # ends the group: the drains read its stderr to the end
        if guards.crashed_in_a_pass(worker.tail_text()):
            self._pass_crashed = self._guard_passes = True  # the next worker guards its passes
            log.info("a torch-mlir pass crashed the worker; its passes now run forked")
        await self._replace(worker)  # the next worker, warming
        return guards.crash_error(worker, returncode, path)

    # --- processes ---------------------------------------------------------------------------

    async def _ensure_worker(self) -> Worker:
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

    async def _await_ready(self, worker: Worker,
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
        if worker.is_ready:
            return
        if cancel_task is not None and cancel_task in done:
            # Cancelled before the job was sent: the warming worker stays as it is.
            raise LensError(ErrorKind.CANCELLED, "cancelled before it started")
        if not done:
            await self._replace(worker)
            raise LensError(ErrorKind.TIMEOUT,
                            f"the worker did not start within {STARTUP_TIMEOUT_S:g} s")
        raise await self._crash_error(worker, None)

    async def _adopt(self, early: EarlyWorker) -> Worker:
        """Take over a worker spawned before the event loop (it has been warming up since)."""
        proc = await spawn.adopt_early(early)
        spawn.set_address_limit(proc.pid, self.memory_limit_mb)
        log.info("worker %d adopted (spawned before the server started)", proc.pid)
        return await self._attach(proc, early.from_worker, early.to_worker)

    async def _spawn(self) -> Worker:
        env = self.env
        if self._guard_passes:
            env = {**(os.environ if env is None else env), GUARD_PASSES_ENV: "1"}
        proc, from_worker_r, to_worker_w = await spawn.spawn(self.python, env, self.cwd)
        spawn.set_address_limit(proc.pid, self.memory_limit_mb)
        log.info("worker %d started", proc.pid)
        return await self._attach(proc, from_worker_r, to_worker_w)

    async def _attach(self, proc: spawn.WorkerProcess, from_worker_r: int,
                      to_worker_w: int) -> Worker:
        worker = await channel.attach(proc, from_worker_r, to_worker_w, self.on_output)
        if self._spawns:
            self.restarts += 1
        self._spawns += 1
        self._worker = worker
        self._programs = frozenset()  # a new worker holds no program yet
        return worker

    async def _replace(self, worker: Worker) -> None:
        """Kill a worker that failed and start the next one warming (unless stopped)."""
        await self._kill(worker)
        if self._worker is worker:
            self._worker = None
        if not self._stopped and self._worker is None:
            try:
                await self._ensure_worker()
            except LensError as exc:
                log.error("cannot restart the worker: %s", exc.message)

    async def _kill(self, worker: Worker) -> None:
        await channel.end(worker)

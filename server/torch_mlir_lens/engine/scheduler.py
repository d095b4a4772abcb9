"""The engine's queue: one job at a time through the worker, shared, superseded, abandoned.

Its rules (the Engine's docstring states them for callers):
- identical jobs in flight share one run; a lowering whose targets a job in flight for the
  same text and options already covers joins that job;
- a job nobody waits for any more is dropped (queued) or killed (running, when the worker
  still has to export its program) if every caller asked for `cancel_on_abandon`;
- a queued job for an older text of a (path, module) is dropped (LensError "cancelled") when a
  job for a newer text of the same module arrives, and a running one is killed (when
  `cancel_stale`) if the worker still has to export it, since a fresh export is needed anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.engine.cache import text_hash
from torch_mlir_lens.protocol.jobs import AnyJob, LowerJob, ModuleJob
from torch_mlir_lens.protocol.programs import program_key
from torch_mlir_lens.protocol.results import ErrorKind, LensError

Reply = dict[str, Any]


@dataclass
class QueuedJob:
    """A job waiting for (or holding) the worker, and who waits for it."""

    key: str  # the cache key: identical jobs share one run
    job: AnyJob
    future: asyncio.Future[Reply]
    waiters: int = 0  # callers awaiting it now
    keep: bool = False  # a caller wants it finished even if nobody waits (checks, the CLI)
    # (path, module) for superseding; None: never superseded.
    module_id: tuple[str, str] | None = field(init=False)
    text_sha: str | None = field(init=False)
    # The exported program a lowering needs (the worker reports the ones it holds).
    program: str | None = field(init=False)

    def __post_init__(self) -> None:
        job = self.job
        module = isinstance(job, ModuleJob) and job.path and job.module
        self.module_id = (job.path, job.module) if isinstance(job, ModuleJob) and module else None
        text = job.text if isinstance(job, ModuleJob) else None
        self.text_sha = text_hash(text) if text is not None else None
        self.program = (program_key(job.to_json(), text)
                        if isinstance(job, LowerJob) and text is not None else None)

    def same_module_older_text(self, newer: QueuedJob) -> bool:
        """Whether `newer` is a job for a newer text of this job's module."""
        return (newer.module_id is not None and self.module_id == newer.module_id
                and self.text_sha != newer.text_sha)

    def covers(self, job: AnyJob) -> bool:
        """Whether this lowering also answers `job`: the same text and options, a superset
        of its targets (a hover's default target while the check lowers every backend)."""
        mine = self.job
        if not (isinstance(mine, LowerJob) and isinstance(job, LowerJob)):
            return False
        if job.pipeline or not job.targets or not set(job.targets) <= set(mine.targets):
            return False
        return dataclasses.replace(mine, targets=[]) == dataclasses.replace(job, targets=[])


class Scheduler:
    """Runs queued jobs one at a time, oldest first, through `run` (the worker client)."""

    def __init__(self, run: Callable[[AnyJob], Awaitable[Reply]],
                 cancel_running: Callable[[], Awaitable[Any]],
                 holds_program: Callable[[str | None], bool]) -> None:
        self._run = run
        self._cancel_running = cancel_running
        self._holds_program = holds_program
        self._queue: list[QueuedJob] = []
        self._inflight: dict[str, QueuedJob] = {}
        self._running: QueuedJob | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._cleanups: set[asyncio.Task[None]] = set()  # abandoned jobs being dropped
        self.before_each: Callable[[], Awaitable[None]] | None = None  # e.g. a client swap

    @property
    def busy(self) -> bool:
        return self._running is not None

    async def submit(self, key: str, job: AnyJob, *, cancel_on_abandon: bool = False,
                     cancel_stale: bool = True) -> Reply:
        """The job's reply, sharing a run of an identical or covering job in flight."""
        shared = self._inflight.get(key) or self._covering(job)
        new = shared is None
        if shared is None:
            shared = QueuedJob(key=key, job=job,
                               future=asyncio.get_running_loop().create_future())
            self._inflight[key] = shared
            self._queue.append(shared)
        shared.waiters += 1
        shared.keep = shared.keep or not cancel_on_abandon
        # Shield: one caller giving up must not cancel a job others (or the cache) still want.
        try:
            if new:
                await self._supersede(shared, cancel_stale)
                self._ensure_pump()
            return await asyncio.shield(shared.future)
        except asyncio.CancelledError:
            if shared.waiters == 1 and not shared.keep and not shared.future.done():
                # This task is being cancelled: the clean-up runs as a task of its own.
                task = asyncio.ensure_future(self._abandon(shared))
                self._cleanups.add(task)
                task.add_done_callback(self._cleanups.discard)
            raise
        finally:
            shared.waiters -= 1

    def fail_queued(self, err: LensError) -> None:
        """Fail every job not yet running (the engine stops)."""
        for queued in self._queue:
            self._fail(queued, err)
        self._queue.clear()

    async def stop(self, err: LensError) -> None:
        """Fail the running job too and end the pump."""
        if self._running is not None:
            self._fail(self._running, err)
        if self._pump_task is not None:
            self._pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump_task
            self._pump_task = None

    def _covering(self, job: AnyJob) -> QueuedJob | None:
        return next((q for q in self._inflight.values() if q.covers(job)), None)

    async def _abandon(self, queued: QueuedJob) -> None:
        """Nobody waits for `queued` any more: drop it, or kill it while it still exports."""
        if queued.waiters or queued.keep or queued.future.done():
            return  # wanted again since (a caller joined meanwhile)
        if queued in self._queue:
            self._queue.remove(queued)
            self._fail(queued, LensError(ErrorKind.CANCELLED, "nobody waits for it any more"))
        elif self._running is queued and self._worth_killing(queued):
            await self._cancel_running()

    def _worth_killing(self, running: QueuedJob) -> bool:
        """Killing costs a worker restart (seconds of imports): worth it only to stop an
        export, not a lowering of a program the worker holds, which ends sooner."""
        return not self._holds_program(running.program)

    async def _supersede(self, newer: QueuedJob, cancel_stale: bool) -> None:
        """Drop queued jobs and kill a running one for an older text of the same module."""
        for queued in [q for q in self._queue if q.same_module_older_text(newer)]:
            self._queue.remove(queued)
            self._fail(queued, LensError(ErrorKind.CANCELLED,
                                         "superseded by a newer version of the file"))
        running = self._running
        if (running is not None and running.same_module_older_text(newer) and cancel_stale
                and self._worth_killing(running)):
            await self._cancel_running()

    def _fail(self, queued: QueuedJob, err: LensError) -> None:
        self._inflight.pop(queued.key, None)
        if not queued.future.done():
            queued.future.set_exception(err)
            # Nobody may be awaiting it any more: mark the exception as retrieved.
            queued.future.exception()

    def _ensure_pump(self) -> None:
        if self._pump_task is None or self._pump_task.done():
            self._pump_task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        while self._queue:
            queued = self._queue.pop(0)
            if queued.future.done():
                continue
            if self.before_each is not None:
                await self.before_each()
            self._running = queued
            try:
                reply = await self._run(queued.job)
            except LensError as err:
                self._fail(queued, err)
            except Exception as exc:  # a bug here must not leave callers waiting forever
                self._fail(queued, LensError(ErrorKind.WORKER_CRASH,
                                             f"{type(exc).__name__}: {exc}"))
            else:
                self._inflight.pop(queued.key, None)
                if not queued.future.done():
                    queued.future.set_result(reply)
            finally:
                self._running = None

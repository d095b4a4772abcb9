"""The Engine: what the language server and the CLI call to lower modules (no torch here).

One worker, one job at a time, results cached by content hash. This is the only scheduling
layer (the language server adds trust, progress and status around it). Its rules
(`scheduler.py` keeps them):
- identical requests in flight share one job; a lowering whose targets a job in flight for
  the same text and options already covers joins that job;
- a job nobody waits for any more is dropped (queued) or killed (running, when the worker
  still has to export its program) if every caller asked for `cancel_on_abandon`;
- a queued request for an older text of a (path, module) is dropped (LensError "cancelled")
  when a request for a newer text of the same module arrives;
- if the job running in the worker is for an older text of that module, it is killed and the
  worker restarted (when `EngineConfig.cancel_stale`), since a fresh export is needed anyway;
- crashes, time-outs and memory overruns come back as LensError; the next job gets a new worker.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from torch_mlir_lens import defaults
from torch_mlir_lens.engine import job_keys
from torch_mlir_lens.engine.answers import Answers
from torch_mlir_lens.engine.persistent_results import PersistentResults
from torch_mlir_lens.engine.scheduler import Scheduler
from torch_mlir_lens.engine.worker_client import OutputCallback, WorkerClient
from torch_mlir_lens.engine.worker_client.spawn import EarlyWorker
from torch_mlir_lens.protocol.jobs import (
    AnyJob,
    ExportJob,
    ExportReply,
    LowerJob,
    ModuleJob,
    ReproJob,
    ReproReply,
    RewritesJob,
    StatsJob,
    VerifyJob,
    WorkerStats,
)
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.protocol.rewrite_results import RewriteReport
from torch_mlir_lens.protocol.verify_results import VerifyResult
from torch_mlir_lens.system.disk_cache import DiskCacheStats

_LIMIT_ERRORS = {ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT}


@dataclass
class EngineConfig:
    """Settings of an Engine; `update_config` changes them while it runs."""

    python: str = sys.executable
    timeout_s: float = defaults.TIMEOUT_S
    memory_limit_mb: int = defaults.MEMORY_LIMIT_MB
    cancel_stale: bool = True  # kill a running job for an older text of the same module
    cache_entries: int = 256
    # The persistent cache's folder (None: off) and its bound; see persistent_results.py.
    cache_dir: str | None = None
    cache_max_mb: int = defaults.CACHE_SIZE_MB
    cwd: str | None = None
    env: dict[str, str] | None = None


@dataclass
class EngineCounters:
    """The worker's counters and the engine's own (its result cache, worker restarts)."""

    worker: WorkerStats
    cache_entries: int
    cache_hits: int
    restarts: int


class Engine:
    """Lower modules through a warm worker process, with caching and cancellation."""

    def __init__(self, config: EngineConfig | None = None, *,
                 on_output: OutputCallback | None = None) -> None:
        self.config = config or EngineConfig()
        self._on_output = on_output
        self._client = self._new_client()
        self._answers = Answers(self.config.cache_entries, self._new_persistent())
        # The client is looked up at each call: a changed interpreter swaps it between jobs.
        self._scheduler = Scheduler(
            run=lambda job: self._client.request(self._frame(job), self.config.timeout_s),
            cancel_running=lambda: self._client.cancel(),
            holds_program=lambda key: key is not None and key in self._client.programs,
        )
        self._scheduler.before_each = self._swap_client_if_asked
        self._restart_client = False
        self._started = False
        self.prespawned_pid: int | None = None  # the worker `prespawn` started, if any

    def _new_persistent(self) -> PersistentResults | None:
        config = self.config
        if not config.cache_dir or config.cache_max_mb <= 0:
            return None
        return PersistentResults(config.cache_dir, config.cache_max_mb, config.python)

    def _frame(self, job: AnyJob) -> dict[str, Any]:
        """What the worker is sent for `job`: its JSON, and for a module job the persistent
        cache's folder (the worker keeps its traced blocks there; not part of any key)."""
        frame = job.to_json()
        if isinstance(job, ModuleJob) and self._answers.persistent is not None:
            frame["block_cache"] = self.config.cache_dir
        return frame

    @property
    def persistent_stats(self) -> DiskCacheStats | None:
        """The persistent cache's counters in this process (None: no persistent cache)."""
        return self._answers.persistent_stats

    def _new_client(self) -> WorkerClient:
        return WorkerClient(
            self.config.python, timeout_s=self.config.timeout_s,
            memory_limit_mb=self.config.memory_limit_mb, env=self.config.env,
            cwd=self.config.cwd, on_output=self._on_output,
        )

    # --- lifecycle ---------------------------------------------------------------------------

    def prespawn(self) -> int | None:
        """Spawn the worker now, before any event loop runs (the language server does it
        first thing, so torch's imports overlap its own); the worker's pid, or None.

        The worker only imports torch until a job arrives: `discard_prespawned` stops it if
        the workspace turns out to be untrusted. `start` adopts it.
        """
        self.prespawned_pid = self._client.prespawn()
        return self.prespawned_pid

    def adopt_prespawned(self, early: EarlyWorker) -> None:
        """As `prespawn`, with a worker spawned before the engine was made (the language
        server spawns it before it imports the engine)."""
        self.prespawned_pid = self._client.prespawn(early)

    def set_output(self, on_output: OutputCallback | None) -> None:
        """Where the worker's stdout/stderr go from now on (e.g. the language server's log)."""
        self._on_output = self._client.on_output = on_output

    def discard_prespawned(self) -> None:
        """Stop a prespawned worker that must not run anything (untrusted, never started)."""
        self._client.discard_prespawned()

    async def start(self) -> None:
        """Spawn the worker; it imports torch in the background (returns at once)."""
        self._started = True
        await self._client.start()

    async def wait_ready(self, timeout: float = 180.0) -> None:
        """Wait until the worker is warm (for status displays and tests)."""
        await self._client.wait_ready(timeout)

    async def stop(self) -> None:
        """Cancel everything queued, stop the worker and its process group."""
        stopped = LensError(ErrorKind.CANCELLED, "the engine was stopped")
        self._scheduler.fail_queued(stopped)
        await self._client.stop()
        await self._scheduler.stop(stopped)
        await self._answers.flush()

    def update_config(self, **changes: Any) -> None:
        """Change settings at run time; time-out and memory limit apply without a restart."""
        old = self.config
        self.config = replace(old, **changes)
        self._client.timeout_s = self.config.timeout_s
        self._client.memory_limit_mb = self.config.memory_limit_mb
        if (self.config.timeout_s, self.config.memory_limit_mb) != (old.timeout_s,
                                                                     old.memory_limit_mb):
            # A module that hit the old limit may fit the new one.
            self._answers.memory.drop_if(
                lambda v: isinstance(v, LensError) and v.kind in _LIMIT_ERRORS)
        if (self.config.cache_dir, self.config.cache_max_mb, self.config.python) != (
                old.cache_dir, old.cache_max_mb, old.python):
            self._answers.persistent = self._new_persistent()
        if (self.config.python, self.config.env, self.config.cwd) != (old.python, old.env,
                                                                       old.cwd):
            self._restart_client = True
            self._answers.memory.clear()

    @property
    def worker_pid(self) -> int | None:
        """pid (= process-group id) of the current worker, if any."""
        return self._client.pid

    @property
    def ready(self) -> bool:
        return self._client.ready

    @property
    def busy(self) -> bool:
        return self._scheduler.busy

    @property
    def restarts(self) -> int:
        """How many times the worker was replaced (crash, time-out, memory, cancel)."""
        return self._client.restarts

    # --- public jobs -------------------------------------------------------------------------

    async def lower(
        self,
        job: ModuleJob,
        targets: Sequence[str] = ("linalg",),
        pipeline: str | None = None,
        *,
        keep_weights: bool = False,
        debug_info: bool = False,
        print_after_all: bool = False,
        list_unsupported: bool = True,
        cancel_on_abandon: bool = False,
        iree_archs: dict[str, str] | None = None,
        profile: bool = False,
    ) -> list[LowerResult]:
        """Lower a module to each target (and/or a custom pipeline): one result per target.

        Cached by content hash of the file text, module, inputs, targets and options. Raises
        LensError for failures that produce no IR (load, inputs, crash, time-out, ...).
        `cancel_on_abandon`: when every caller waiting for this job was cancelled and all of
        them passed True, the job is dropped or killed (a pane the user closed); otherwise it
        finishes and its result is cached (a check the features will want anyway).
        `iree_archs` and `profile`: the IREE targets' architectures and timing
        (`protocol.jobs.LowerJob`).
        """
        request = job_keys.filled(job).as_job(
            LowerJob, targets=list(targets), pipeline=pipeline, keep_weights=keep_weights,
            debug_info=debug_info, print_after_all=print_after_all,
            list_unsupported=list_unsupported, iree_archs=dict(iree_archs or {}),
            profile=profile,
        )
        result = await self._submit(request, cache=True, cancel_on_abandon=cancel_on_abandon)
        results = [LowerResult.from_json(r) for r in result.get("results", [])]
        if pipeline is None:
            # A job that covered this request (`QueuedJob.covers`) lowered more targets.
            results = [r for r in results if r.target in targets]
        return results

    async def export(self, job: ModuleJob, target: str, output: str,
                     bytecode: bool = False, iree_arch: str | None = None) -> ExportReply:
        """Write the module's IR at `target` to `output` atomically (an IREE target's
        compiled module, for `iree_arch`): where, and its size."""
        output = os.path.abspath(output)
        request = job_keys.filled(job).as_job(
            ExportJob, target=target, output=output, bytecode=bytecode, iree_arch=iree_arch)
        before = _write_temps(output)
        try:
            return ExportReply.from_json(await self._submit(request, cache=False), output)
        except LensError:
            # A worker killed mid-write cannot remove its own temp file: do it here. The
            # previous file at `output` is untouched (the write goes through os.replace).
            for leftover in _write_temps(output) - before:
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
            raise

    async def repro(self, job: ModuleJob, target: str, output_dir: str) -> ReproReply:
        """Write a reproducer (.mlir + torch-mlir-opt command): its file and command."""
        request = job_keys.filled(job).as_job(
            ReproJob, target=target, output_dir=os.path.abspath(output_dir))
        return ReproReply.from_json(await self._submit(request, cache=False))

    async def verify(self, job: ModuleJob, *, rtol: float | None = None,
                     atol: float | None = None, opt_level: int = 0,
                     target: str = "linalg") -> VerifyResult:
        """JIT the module's Linalg IR (or `target`'s, converted to Linalg), run it on its
        example inputs and compare with eager PyTorch (never cached: it runs the user's code).
        A verdict, also when it differs or does not lower; LensError when it cannot start
        (load, inputs, crash, time-out)."""
        request = job_keys.filled(job).as_job(VerifyJob, rtol=rtol, atol=atol,
                                              opt_level=opt_level, target=target)
        return VerifyResult.from_json(await self._submit(request, cache=False))

    async def rewrites(self, job: ModuleJob, targets: Sequence[str]) -> RewriteReport:
        """Each op `targets` reject, with the rewrites proven to take the module past it
        (worker/rewrites/), or why none. Cached like a lowering: it depends on the same."""
        request = job_keys.filled(job).as_job(RewritesJob, targets=list(targets))
        return RewriteReport.from_json(await self._submit(request, cache=True))

    async def export_code(self, job: ModuleJob, target: str) -> dict[str, Any]:
        """Python that reproduces the module's IR at `target` with plain torch-mlir, its
        rewrites inlined: `{"code", "rewrites"}`."""
        from torch_mlir_lens.protocol.jobs import ExportCodeJob

        request = job_keys.filled(job).as_job(ExportCodeJob, target=target)
        return await self._submit(request, cache=True)

    async def graph(self, job: ModuleJob, targets: Sequence[str]) -> dict[str, Any]:
        """The module's graph with each node's verdict at `targets`: `ModuleGraph.to_json()`
        (protocol/graph.py). Cached like a lowering: it depends on the same."""
        from torch_mlir_lens.protocol.jobs import GraphJob

        request = job_keys.filled(job).as_job(GraphJob, targets=list(targets))
        answer = await self._submit(request, cache=True)
        return answer.get("graph") or {}

    async def stats(self) -> EngineCounters:
        """The worker's counters (it answers between jobs) and the engine's."""
        worker = WorkerStats.from_json(await self._submit(StatsJob(), cache=False))
        memory = self._answers.memory
        return EngineCounters(worker=worker, cache_entries=len(memory),
                              cache_hits=memory.hits, restarts=self._client.restarts)

    def forget_results(self) -> None:
        """Empty the in-memory result cache (the persistent one keeps its entries)."""
        self._answers.memory.clear()

    async def flush(self) -> None:
        """Wait until the persistent cache has written what it was given."""
        await self._answers.flush()

    def invalidate(self, path: str) -> set[str]:
        """Forget results of a file, of its neighbours (which may import it) and of every
        file whose answer read it; returns the files whose answers read it (their documents'
        results are stale too)."""
        return self._answers.invalidate(path)

    def files_read(self) -> dict[str, set[str]]:
        """The files (real paths) the kept answers read, with the digests of what they read."""
        return self._answers.files_read()

    # --- submitting ----------------------------------------------------------------------

    async def _submit(self, job: AnyJob, *, cache: bool,
                      cancel_on_abandon: bool = False) -> dict[str, Any]:
        key = job_keys.cache_key(job)
        path = job.path if isinstance(job, ModuleJob) else None
        # Lowerings and proofs of rewrites: both are answers about the module's content.
        on_disk = cache and isinstance(job, LowerJob | RewritesJob)
        if cache and (value := self._answers.recalled(key)) is not None:
            return value  # type: ignore[no-any-return]
        if on_disk and (stored := await self._answers.stored(key, path)) is not None:
            return stored
        try:
            result = await self._scheduler.submit(key, job, cancel_on_abandon=cancel_on_abandon,
                                                  cancel_stale=self.config.cancel_stale)
        except LensError as err:
            self._answers.keep_failure(key, path, err, memory=cache)
            raise
        return self._answers.keep(key, path, result, memory=cache, disk=on_disk)

    async def _swap_client_if_asked(self) -> None:
        """Before a job: a changed interpreter, environment or folder needs a new worker."""
        if self._restart_client:
            self._restart_client = False
            await self._client.stop()
            self._client = self._new_client()


def _write_temps(output: str) -> set[str]:
    """The temp files an atomic write of `output` makes beside it (worker/stages/artifacts.py)."""
    folder, name = os.path.split(output)
    try:
        entries = os.listdir(folder)
    except OSError:
        return set()
    return {os.path.join(folder, e) for e in entries
            if e.startswith(f".{name}.") and e.endswith(".tmp")}

"""The Engine: what the language server and the CLI call to lower modules (no torch here).

One worker, one job at a time, results cached by content hash. This is the only scheduling
layer (the language server adds trust, progress and status around it). Its rules:
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

import asyncio
import contextlib
import hashlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from torch_mlir_lens.engine.cache import ResultCache, content_key, text_hash
from torch_mlir_lens.engine.worker_client import OutputCallback, WorkerClient
from torch_mlir_lens.fingerprint import job_fingerprint
from torch_mlir_lens.protocol.jobs import (
    ExportJob,
    LowerJob,
    ModuleJob,
    ReproJob,
    StatsJob,
    VerifyJob,
)
from torch_mlir_lens.protocol.programs import program_key
from torch_mlir_lens.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.verify_results import VerifyResult

# Errors that depend on the text and the settings, not on luck: remembered like results so a
# hover over a hanging module does not hang the worker again until the text changes.
_TRANSIENT_ERRORS = {ErrorKind.CANCELLED}
_LIMIT_ERRORS = {ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT}


@dataclass
class EngineConfig:
    """Settings of an Engine; `update_config` changes them while it runs."""

    python: str = sys.executable
    timeout_s: float = 60.0
    memory_limit_mb: int = 8192
    cancel_stale: bool = True  # kill a running job for an older text of the same module
    cache_entries: int = 256
    cwd: str | None = None
    env: dict[str, str] | None = None


@dataclass
class _Pending:
    """A job waiting for (or holding) the worker."""

    key: str
    job: dict[str, Any]
    module_id: tuple[str, str] | None  # (path, module) for superseding; None: never superseded
    text_sha: str | None
    future: asyncio.Future[dict[str, Any]]
    program: str | None = None  # the exported program a lower job needs (protocol.programs)
    waiters: int = 0  # callers awaiting it now
    keep: bool = False  # a caller wants it finished even if nobody waits (checks, the CLI)


class Engine:
    """Lower modules through a warm worker process, with caching and cancellation."""

    def __init__(self, config: EngineConfig | None = None, *,
                 on_output: OutputCallback | None = None) -> None:
        self.config = config or EngineConfig()
        self._on_output = on_output
        self._client = self._new_client()
        self._cache = ResultCache(self.config.cache_entries)
        self._queue: list[_Pending] = []
        self._inflight: dict[str, _Pending] = {}
        self._running: _Pending | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._restart_client = False
        self._started = False
        self._cleanups: set[asyncio.Task[None]] = set()  # abandoned jobs being dropped
        self.prespawned_pid: int | None = None  # the worker `prespawn` started, if any

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
        for pending in self._queue:
            self._fail(pending, LensError(ErrorKind.CANCELLED, "the engine was stopped"))
        self._queue.clear()
        await self._client.stop()
        if self._running is not None:
            self._fail(self._running, LensError(ErrorKind.CANCELLED, "the engine was stopped"))
        if self._pump_task is not None:
            self._pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump_task
            self._pump_task = None

    def update_config(self, **changes: Any) -> None:
        """Change settings at run time; time-out and memory limit apply without a restart."""
        old = self.config
        self.config = replace(old, **changes)
        self._client.timeout_s = self.config.timeout_s
        self._client.memory_limit_mb = self.config.memory_limit_mb
        if (self.config.timeout_s, self.config.memory_limit_mb) != (old.timeout_s,
                                                                     old.memory_limit_mb):
            # A module that hit the old limit may fit the new one.
            self._cache.drop_if(lambda v: isinstance(v, LensError) and v.kind in _LIMIT_ERRORS)
        if (self.config.python, self.config.env, self.config.cwd) != (old.python, old.env,
                                                                       old.cwd):
            self._restart_client = True
            self._cache.clear()

    @property
    def worker_pid(self) -> int | None:
        """pid (= process-group id) of the current worker, if any."""
        return self._client.pid

    @property
    def ready(self) -> bool:
        return self._client.ready

    @property
    def busy(self) -> bool:
        return self._running is not None

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
    ) -> list[LowerResult]:
        """Lower a module to each target (and/or a custom pipeline): one result per target.

        Cached by content hash of the file text, module, inputs, targets and options. Raises
        LensError for failures that produce no IR (load, inputs, crash, time-out, ...).
        `cancel_on_abandon`: when every caller waiting for this job was cancelled and all of
        them passed True, the job is dropped or killed (a pane the user closed); otherwise it
        finishes and its result is cached (a check the features will want anyway).
        """
        request = self._filled(job).as_job(
            LowerJob, targets=list(targets), pipeline=pipeline, keep_weights=keep_weights,
            debug_info=debug_info, print_after_all=print_after_all,
            list_unsupported=list_unsupported,
        ).to_json()
        result = await self._submit(request, cache=True, cancel_on_abandon=cancel_on_abandon)
        results = [LowerResult.from_json(r) for r in result.get("results", [])]
        if pipeline is None:
            # A job that covered this request (see `_covering`) lowered more targets.
            results = [r for r in results if r.target in targets]
        return results

    async def export(self, job: ModuleJob, target: str, output: str,
                     bytecode: bool = False) -> dict[str, Any]:
        """Write the module's IR at `target` to `output` atomically → {"path", "bytes"}."""
        output = os.path.abspath(output)
        request = self._filled(job).as_job(
            ExportJob, target=target, output=output, bytecode=bytecode).to_json()
        before = _write_temps(output)
        try:
            return await self._submit(request, cache=False)
        except LensError:
            # A worker killed mid-write cannot remove its own temp file: do it here. The
            # previous file at `output` is untouched (the write goes through os.replace).
            for leftover in _write_temps(output) - before:
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
            raise

    async def repro(self, job: ModuleJob, target: str, output_dir: str) -> dict[str, Any]:
        """Write a reproducer (.mlir + torch-mlir-opt command) → {"mlir_path", "command"}."""
        request = self._filled(job).as_job(
            ReproJob, target=target, output_dir=os.path.abspath(output_dir)).to_json()
        return await self._submit(request, cache=False)

    async def verify(self, job: ModuleJob, *, rtol: float | None = None,
                     atol: float | None = None, opt_level: int = 0) -> VerifyResult:
        """JIT the module's Linalg IR, run it on its example inputs and compare with eager
        PyTorch (never cached: it runs the user's code). A verdict, also when it differs or
        does not lower; LensError when it cannot start (load, inputs, crash, time-out)."""
        request = self._filled(job).as_job(
            VerifyJob, rtol=rtol, atol=atol, opt_level=opt_level).to_json()
        return VerifyResult.from_json(await self._submit(request, cache=False))

    async def stats(self) -> dict[str, Any]:
        """Worker counters {"jobs_run", "exports_run", "pid"} plus the engine's cache counters."""
        result = await self._submit(StatsJob().to_json(), cache=False)
        return {**result, "cache_entries": len(self._cache), "cache_hits": self._cache.hits,
                "restarts": self._client.restarts}

    def invalidate(self, path: str) -> None:
        """Forget results of a file (and of its neighbours, which may import it)."""
        self._cache.invalidate(path)

    # --- scheduling --------------------------------------------------------------------------

    @staticmethod
    def _filled(job: ModuleJob) -> ModuleJob:
        """The job's common fields with its text and the module's fingerprint filled in."""
        filled = job.module_fields()
        filled.path = path = os.path.abspath(job.path)
        if filled.text is None:
            # Hash (and send) the content, so the cache key is the text, not the path.
            try:
                filled.text = Path(path).read_text(encoding="utf-8")
            except FileNotFoundError as exc:
                raise LensError(ErrorKind.LOAD_ERROR, f"no such file: {path}",
                                file=path) from exc
            except (OSError, UnicodeDecodeError) as exc:
                raise LensError(ErrorKind.LOAD_ERROR, f"cannot read {path}: {exc}",
                                file=path) from exc
        # Computed here anyway (cache keys, usually already cached from the document): sent
        # along so the worker does not parse the file again to key its exported programs.
        filled.fingerprint = job_fingerprint(filled.to_json(), filled.text)
        return filled

    @staticmethod
    def _key(request: dict[str, Any]) -> str:
        parts = dict(request)
        if isinstance(parts.get("text"), str):
            # The module's own fingerprint stands for the text (an edit elsewhere in the file
            # keeps its result); `_filled` already computed it for the worker.
            sent = parts.pop("fingerprint", None)
            parts["text"] = sent if isinstance(sent, str) else job_fingerprint(
                parts, parts["text"])
        if isinstance(parts.get("inputs_file"), str):
            # A re-saved inputs file must not be answered from the cache.
            try:
                parts["inputs_file_sha"] = hashlib.sha256(
                    Path(parts["inputs_file"]).read_bytes()).hexdigest()
            except OSError:
                parts["inputs_file_sha"] = None
        return content_key(parts)

    async def _submit(self, request: dict[str, Any], *, cache: bool,
                      cancel_on_abandon: bool = False) -> dict[str, Any]:
        key = self._key(request)
        if cache:
            value = self._cache.get(key)
            if isinstance(value, LensError):
                raise LensError(value.kind, value.message, file=value.file, line=value.line)
            if value is not None:
                return value  # type: ignore[no-any-return]
        shared = self._inflight.get(key) or self._covering(request)
        new = shared is None
        if shared is None:
            loop = asyncio.get_running_loop()
            path, module = request.get("path"), request.get("module")
            text = request.get("text")
            shared = _Pending(
                key=key, job=request,
                module_id=(path, module) if path and module else None,
                text_sha=text_hash(text) if isinstance(text, str) else None,
                future=loop.create_future(),
                program=self._program_key(request),
            )
            self._inflight[key] = shared
            self._queue.append(shared)
        shared.waiters += 1
        shared.keep = shared.keep or not cancel_on_abandon
        # Shield: one caller giving up must not cancel a job others (or the cache) still want.
        try:
            if new:
                await self._supersede(shared)
                self._ensure_pump()
            result = await asyncio.shield(shared.future)
        except asyncio.CancelledError:
            if shared.waiters == 1 and not shared.keep and not shared.future.done():
                # This task is being cancelled: the clean-up runs as a task of its own.
                task = asyncio.ensure_future(self._abandon(shared))
                self._cleanups.add(task)
                task.add_done_callback(self._cleanups.discard)
            raise
        except LensError as err:
            # A load error may come from code outside the module's fingerprint: not cached.
            if cache and err.kind not in _TRANSIENT_ERRORS and request.get("path") and (
                    err.kind != ErrorKind.LOAD_ERROR):
                self._cache.put(key, request["path"], err)
            raise
        finally:
            shared.waiters -= 1
        if cache and request.get("path"):
            self._cache.put(key, request["path"], result)
        return result

    def _covering(self, request: dict[str, Any]) -> _Pending | None:
        """A lowering in flight of the same text and options whose targets include all of
        this request's (a hover's default target while the check lowers every backend)."""
        if request.get("op") != "lower" or request.get("pipeline") or not request.get("targets"):
            return None
        wanted = set(request["targets"])
        rest = {k: v for k, v in request.items() if k != "targets"}
        for pending in self._inflight.values():
            job = pending.job
            if (job.get("op") == "lower" and wanted <= set(job.get("targets") or ())
                    and {k: v for k, v in job.items() if k != "targets"} == rest):
                return pending
        return None

    async def _abandon(self, pending: _Pending) -> None:
        """Nobody waits for `pending` any more: drop it, or kill it while it still exports."""
        if pending.waiters or pending.keep or pending.future.done():
            return  # wanted again since (a caller joined meanwhile)
        if pending in self._queue:
            self._queue.remove(pending)
            self._fail(pending, LensError(ErrorKind.CANCELLED, "nobody waits for it any more"))
        elif self._running is pending and self._worth_killing(pending):
            await self._client.cancel()

    def _worth_killing(self, running: _Pending) -> bool:
        """Killing costs a worker restart (seconds of imports): worth it only to stop an
        export, not a lowering of a program the worker holds, which ends sooner."""
        return running.program not in self._client.programs

    async def _supersede(self, newer: _Pending) -> None:
        """Drop queued jobs and kill a running one for an older text of the same module."""
        if newer.module_id is None:
            return

        def stale(p: _Pending) -> bool:
            return p.module_id == newer.module_id and p.text_sha != newer.text_sha

        for pending in [p for p in self._queue if stale(p)]:
            self._queue.remove(pending)
            self._fail(pending, LensError(ErrorKind.CANCELLED,
                                          "superseded by a newer version of the file"))
        running = self._running
        if (running is not None and stale(running) and self.config.cancel_stale
                and self._worth_killing(running)):
            await self._client.cancel()

    def _fail(self, pending: _Pending, err: LensError) -> None:
        self._inflight.pop(pending.key, None)
        if not pending.future.done():
            pending.future.set_exception(err)
            # Nobody may be awaiting it any more: mark the exception as retrieved.
            pending.future.exception()

    def _ensure_pump(self) -> None:
        if self._pump_task is None or self._pump_task.done():
            self._pump_task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        """Run queued jobs one at a time, oldest first."""
        while self._queue:
            pending = self._queue.pop(0)
            if pending.future.done():
                continue
            if self._restart_client:
                self._restart_client = False
                await self._client.stop()
                self._client = self._new_client()
            self._running = pending
            try:
                result = await self._client.request(pending.job, self.config.timeout_s)
            except LensError as err:
                self._fail(pending, err)
            except Exception as exc:  # a bug here must not leave callers waiting forever
                self._fail(pending, LensError(ErrorKind.WORKER_CRASH,
                                              f"{type(exc).__name__}: {exc}"))
            else:
                self._inflight.pop(pending.key, None)
                if not pending.future.done():
                    pending.future.set_result(result)
            finally:
                self._running = None

    @staticmethod
    def _program_key(request: dict[str, Any]) -> str | None:
        """The exported program a lowering job needs (the worker reports the ones it holds)."""
        text = request.get("text")
        if request.get("op") != "lower" or not isinstance(text, str):
            return None
        return program_key(request, text)


def _write_temps(output: str) -> set[str]:
    """The temp files an atomic write of `output` makes beside it (worker/lowering/artifacts.py)."""
    folder, name = os.path.split(output)
    try:
        entries = os.listdir(folder)
    except OSError:
        return set()
    return {os.path.join(folder, e) for e in entries
            if e.startswith(f".{name}.") and e.endswith(".tmp")}

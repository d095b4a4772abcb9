"""The language server's engine: its life cycle, the trust gate and the server's status.

Everything that runs user code goes through `EngineHost`: an untrusted workspace never starts
the worker, every call shows in the `torchMlirLens/status` notifications (and, when asked, as
work-done progress). Sharing, superseding and cancelling lowerings is the engine's job
(`engine/engine.py`, the one scheduling layer); what a check records on a document is
`staging.py`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types

from torch_mlir_lens.engine.persistent_results import default_cache_dir
from torch_mlir_lens.lsp.checks import cell_positions
from torch_mlir_lens.lsp.checks.missing_dependencies import MissingDependencies
from torch_mlir_lens.lsp.checks.output_budget import OutputBudget
from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.lsp.state.trust import UNTRUSTED, holds, real_folder
from torch_mlir_lens.lsp.wire.work_done_progress import progress as progress_of
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult

if TYPE_CHECKING:
    from torch_mlir_lens.engine import Engine, ModuleJob
    from torch_mlir_lens.engine.engine import EngineCounters
    from torch_mlir_lens.lsp.state.session import SessionState

log = logging.getLogger(__name__)

STATUS = lens_types.STATUS
_T = TypeVar("_T")


@dataclass
class _Status:
    state: str = "starting"
    detail: str | None = None
    busy: int = 0
    sent: tuple[str, str | None] | None = field(default=None)


class EngineHost:
    """Starts, stops and calls the engine for the language features, behind the trust gate."""

    def __init__(self, session: SessionState) -> None:
        self._session = session
        self.engine: Engine | None = None
        self.prespawned: Engine | None = None  # made by `serve` before the loop, not started
        self._start_task: asyncio.Task[None] | None = None
        self._spawned: asyncio.Future[None] | None = None
        self._status = _Status()
        self._output_budget = OutputBudget(lambda line: log.info("%s", line))
        self.missing = MissingDependencies(session.client)  # told to the client once each

    # -- life cycle ---------------------------------------------------------------------

    @property
    def trusted(self) -> bool:
        return self._session.trusted

    def start(self) -> None:
        """Start (warm) the worker in the background, if the workspace is trusted."""
        if not self.trusted:
            self.set_status(UNTRUSTED, self._session.trust.detail)
            return
        if self.engine is not None:
            return
        from torch_mlir_lens.engine import Engine, EngineConfig  # no torch import

        config = EngineConfig(python=sys.executable, **self._engine_settings())
        engine, self.prespawned = self.prespawned, None
        if engine is None:
            engine = Engine(config, on_output=self._worker_output)
        else:
            # Limits apply without a restart; the interpreter is the same (ours).
            engine.update_config(**self._engine_settings())
            engine.set_output(self._worker_output)
        self.engine = engine
        self.set_status("starting", "starting the lowering worker")
        self._spawned = asyncio.get_running_loop().create_future()
        self._start_task = asyncio.ensure_future(self._warm(self.engine, self._spawned))

    def hold_prespawned(self, engine: Engine) -> None:
        """Keep the engine `serve` made before the loop (not started): `start` takes it over,
        `discard_prespawned` stops its worker."""
        self.prespawned = engine

    def discard_prespawned(self) -> None:
        """Stop the worker `serve` spawned before the client said the workspace is untrusted."""
        engine, self.prespawned = self.prespawned, None
        if engine is not None:
            engine.discard_prespawned()

    async def _warm(self, engine: Engine, spawned: asyncio.Future[None]) -> None:
        try:
            try:
                await engine.start()
            finally:
                if not spawned.done():
                    spawned.set_result(None)
            await engine.wait_ready()
        except Exception as exc:  # the worker may fail to start: say so, keep serving
            log.error("lowering worker failed to start: %s", exc)
            self.set_status("error", f"lowering worker failed to start: {exc}")
            return
        log.info("lowering worker ready")
        if self._status.busy == 0:
            self.set_status("ready")

    def _worker_output(self, stream: str, text: str) -> None:
        """What the worker (user code) printed goes to the log, never to our stdout; bounded."""
        self._output_budget.feed(stream, text)

    async def stop(self) -> None:
        """Stop the worker (shutdown, or trust withdrawn)."""
        engine, self.engine = self.engine, None
        if self._start_task is not None:
            self._start_task.cancel()
            self._start_task = None
        if self._spawned is not None and not self._spawned.done():
            self._spawned.set_result(None)  # release callers waiting for the spawn
        if engine is not None:
            with contextlib.suppress(Exception):
                await engine.stop()

    def update_config(self) -> None:
        """Apply time-out and memory settings to a running engine."""
        if self.engine is None:
            return
        try:
            self.engine.update_config(**self._engine_settings())
        except Exception as exc:
            log.warning("could not apply engine settings: %s", exc)

    def _engine_settings(self) -> dict[str, Any]:
        """The engine's settings that come from the user's: limits, the persistent cache."""
        settings = self._session.settings
        return {"timeout_s": settings.timeout_seconds,
                "memory_limit_mb": settings.memory_limit_mb,
                "cache_dir": default_cache_dir(), "cache_max_mb": settings.cache_size_mb}

    def invalidate(self, path: str | None) -> set[str]:
        """Tell the engine a file's text changed (files importing it may lower differently);
        the files whose answers read it, whatever their folder."""
        if self.engine is not None and path:
            with contextlib.suppress(Exception):
                return self.engine.invalidate(path)
        return set()

    def files_read(self) -> dict[str, set[str]]:
        """The files the engine's answers read, with the digests of what they read (what a
        change on disk makes stale)."""
        return self.engine.files_read() if self.engine is not None else {}

    # -- status -------------------------------------------------------------------------

    def set_status(self, state: str, detail: str | None = None) -> None:
        """Send `torchMlirLens/status` when the state or its detail changed."""
        self._status.state, self._status.detail = state, detail
        if self._status.sent == (state, detail):
            return
        self._status.sent = (state, detail)
        # An unknown state name is a bug here, not the client's problem: sent as it is.
        payload = lens_types.StatusParams(
            state=state, detail=detail or None)  # type: ignore[arg-type]
        with contextlib.suppress(Exception):
            self._session.client.notify(STATUS, payload)

    @property
    def status(self) -> dict[str, Any]:
        return {"state": self._status.state, "detail": self._status.detail}

    @contextlib.contextmanager
    def _busy(self, what: str) -> Any:
        self._status.busy += 1
        self.set_status("lowering", what)
        try:
            yield
        finally:
            self._status.busy -= 1
            if self._status.busy == 0 and self._status.state == "lowering":
                self.set_status("ready")

    # -- jobs ---------------------------------------------------------------------------

    async def _engine_or_raise(self) -> Engine:
        if not self.trusted:
            raise LensError(UNTRUSTED, self._session.trust.refusal)
        if self.engine is None:
            self.start()
        engine = self.engine
        assert engine is not None
        # A job sent while the worker is being spawned would spawn a second one.
        if self._spawned is not None and not self._spawned.done():
            await asyncio.shield(self._spawned)
        if self.engine is not engine:
            raise LensError(ErrorKind.CANCELLED, "the lowering engine was stopped")
        return engine

    def job(self, doc: Document, module: str, inline_blocks: bool | None = None,
            via: str = "fx") -> ModuleJob:
        """The engine job for `module` of the document's current text (`inline_blocks`:
        None for the `stitchBlocks` setting; `via`: "onnx" for the ONNX exporter's path)."""
        from torch_mlir_lens.engine import JobSettings, module_job

        if not doc.path:
            raise LensError(
                ErrorKind.BAD_REQUEST, "Save the file first: only files on disk can be lowered."
            )
        settings = self._session.settings_for(doc.path)
        return module_job(
            doc.path, module, text=cell_positions.job_text(self._session, doc, module),
            workspace=self._import_root(doc.path),
            settings=JobSettings(
                example_inputs=dict(settings.example_inputs),
                strict_export=settings.strict_export, rewrites=tuple(settings.rewrites),
                inline_blocks=not settings.stitch_blocks if inline_blocks is None
                else inline_blocks), via=via)

    def _import_root(self, path: str) -> str | None:
        """The folder a job of `path` may import from (the worker puts it on sys.path): the
        workspace root when it holds the file, else the trusted folder that does; refused
        (once told to the user) when no trusted folder holds it."""
        trust = self._session.trust
        if not trust.trusted:  # nothing is trusted: the server-wide refusal, told at start
            raise LensError(UNTRUSTED, trust.refusal)
        root = trust.root_of(path)
        if root is None:
            message = trust.folder_refusal(path)
            if trust.first_refusal(path):
                self._session.show(message, types.MessageType.Warning)
                log.warning("%s", message)
            raise LensError(UNTRUSTED, message)
        workspace = self._session.workspace_root
        if workspace and trust.covers(workspace) and holds(real_folder(workspace),
                                                             real_folder(path)):
            return workspace
        return root

    async def lower(
        self,
        doc: Document,
        module: str,
        targets: list[str] | None = None,
        *,
        pipeline: str | None = None,
        print_after_all: bool = False,
        progress_token: types.ProgressToken | None = None,
        progress: bool = False,
        cancel_on_abandon: bool = True,
        inline_blocks: bool | None = None,
        profile: bool = False,
        via: str = "fx",
    ) -> list[LowerResult]:
        """Lower `module` of the document's current text, behind the trust gate (the IREE
        targets at their `ireeArchs` architectures; `profile`: IREE CPU timed, per line).

        The engine schedules it: callers asking for the same lowering share one job, a
        lowering of an older text is dropped or killed when a newer one is submitted, and a
        job whose callers were all cancelled (`$/cancelRequest`) is dropped when each of them
        passed `cancel_on_abandon`. Checks pass False: their results are wanted by the other
        features anyway, and a hover the mouse left must not restart the worker.
        """
        engine = await self._engine_or_raise()
        job = self.job(doc, module, inline_blocks, via)
        what = f"{module} → {'custom pipeline' if pipeline else ', '.join(targets or [])}"
        if via != "fx":
            what += f" (via {via.upper()})"
        # Each caller shows progress for its own wait (a hover joining a check under way too).
        async with progress_of(self._session.client, f"Lowering {module}", what,
                               token=progress_token, enabled=progress):
            with self._busy(f"lowering {what}"):
                log.info("lowering %s", what)
                results = await engine.lower(
                    job, targets=list(targets or []), pipeline=pipeline,
                    print_after_all=print_after_all, cancel_on_abandon=cancel_on_abandon,
                    # Every job names them (not only IREE ones): a check covers a hover's.
                    iree_archs=dict(self._session.settings_for(doc.path).iree_archs),
                    profile=profile,
                )
        for result in results:
            for diag in result.diagnostics:
                if diag.kind == ErrorKind.MISSING_DEPENDENCY:
                    self.missing.tell(diag.message, diag.target or result.target)
        return results

    async def call(self, what: str, fn: Callable[[Engine], Awaitable[_T]],
                   target: str | None = None) -> _T:
        """Run another engine call (export, repro, stats) behind the trust gate; `target`:
        the one it is for, whose missing compiler the client is then told of."""
        engine = await self._engine_or_raise()
        with self._busy(what):
            try:
                return await fn(engine)
            except LensError as err:
                if err.kind == ErrorKind.MISSING_DEPENDENCY and target:
                    self.missing.tell(err.message, target)
                raise

    async def stats(self, wait_s: float = 2.0) -> lens_types.EngineStats | None:
        """Engine and worker counters, or None when no engine runs (untrusted, not started).

        The worker answers `stats` between jobs only: when it is busy for longer than
        `wait_s`, the worker's counters are left out (`workerBusy: true`).
        """
        engine = self.engine
        if engine is None:
            return None
        if self._spawned is not None and not self._spawned.done():
            await asyncio.shield(self._spawned)  # see _engine_or_raise
        counters: EngineCounters | None = None
        busy, error = False, None
        try:
            counters = await asyncio.wait_for(engine.stats(), wait_s)
        except TimeoutError:
            busy = True
        except LensError as err:
            error = err.message
        # Read after the worker answered (or not): the state as of now.
        out = lens_types.EngineStats(
            restarts=engine.restarts, ready=engine.ready, busy=engine.busy,
            worker_pid=engine.worker_pid, early_pid=engine.prespawned_pid,
            worker_busy=busy, error=error)
        disk = engine.persistent_stats
        if disk is not None:
            out.persistent_hits, out.persistent_misses = disk.hits, disk.misses
            out.persistent_stale, out.persistent_writes = disk.stale, disk.writes
        if counters is not None:
            out.jobs_run = counters.worker.jobs_run
            out.exports_run = counters.worker.exports_run
            out.cached_programs = counters.worker.cached_programs
            out.pid = counters.worker.pid
            out.cache_entries = counters.cache_entries
            out.cache_hits = counters.cache_hits
        return out

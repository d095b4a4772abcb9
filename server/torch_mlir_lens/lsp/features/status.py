"""Life cycle, settings and trust: initialize, configuration changes, shutdown, server info.

- `initialize` reads `initializationOptions` (`trusted`, `settings`).
- `initialized` starts the lowering worker in the background (trusted workspaces only) and
  pulls `workspace/configuration`; `workspace/didChangeConfiguration` pulls it again, so a
  changed setting takes effect without a restart.
- Trust (`initializationOptions.trusted`, the setTrusted notification and command) is
  `trust.py`'s.
- `torchMlirLens/serverInfo` (request) `{waitForWorker?}` answers `ServerInfoResponse`
  (`protocol.lsp`): `{pid, version, torchImported, torchMlirImported, trusted, status,
  settings, engine}`; `settings` the effective `ServerSettings`, `engine` null without a
  worker, else `EngineStats`: `{restarts, ready, busy, workerPid, earlyPid}` plus the
  worker's `{jobsRun, exportsRun, cachedPrograms, pid, cacheEntries, cacheHits}`. The
  worker answers between jobs only: by default the request waits for a worker that is still
  starting, but only 2 s behind a running job (then `workerBusy: true`); `waitForWorker:
  true` always waits, `false` never more than 2 s. Tests and benchmarks use it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from lsprotocol import types
from pygls.capabilities import get_capability

from torch_mlir_lens.lsp import convert
from torch_mlir_lens.lsp.features import diagnostics, project_config, trust
from torch_mlir_lens.lsp.settings import SECTION, Settings, effective_settings, section_of
from torch_mlir_lens.protocol import lsp as lens_types

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.server import LensServer

log = logging.getLogger(__name__)

SERVER_INFO = lens_types.SERVER_INFO


def register(server: LensServer) -> None:
    """Register the life-cycle handlers."""

    @server.feature(types.INITIALIZE)
    def on_initialize(params: types.InitializeParams) -> None:
        options = convert.json_object(params.initialization_options) or {}
        # A client that says nothing about trust gets none: see lsp/trust.py.
        server.trust.state(options.get("trusted"))
        if not server.trusted:
            server.service.discard_prespawned()  # spawned before we knew: no user code ran
        server.init_settings = dict(section_of(options.get("settings")) or {})
        server.workspace_root = _workspace_root(params)
        apply_settings(server, None, initial=True)

    @server.feature(types.INITIALIZED)
    async def on_initialized(params: types.InitializedParams) -> None:
        server.initialized = True
        log.info(
            "torch-mlir-lens %s (pid %d, trusted=%s)", server.version, os.getpid(),
            server.trusted,
        )
        if not server.trusted:
            trust.announce_untrusted(server)
        else:
            server.service.start()
        await pull_settings(server)
        server.background(project_config.watch(server))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def on_watched(params: types.DidChangeWatchedFilesParams) -> None:
        if project_config.changed(params):
            log.info("pyproject.toml changed: reading [tool.torch-mlir-lens] again")
            await pull_settings(server)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(params: types.DidChangeConfigurationParams) -> None:
        payload = convert.json_object(params.settings)
        # Never trust from here: what a client pushes as configuration may come from the
        # workspace itself (Emacs sends a project's .dir-locals.el eglot-workspace-configuration,
        # which it applies without asking), and a workspace must not trust itself.
        pushed = section_of(payload)
        if pushed is not None:  # kept: a client without workspace/configuration sends no more
            server.pushed_settings = dict(pushed)
        await pull_settings(server)

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(params: Any) -> None:
        await server.service.stop()

    @server.feature(SERVER_INFO)
    async def server_info(
            params: lens_types.ServerInfoParams | None) -> lens_types.ServerInfoResponse:
        wait = params.wait_for_worker if params is not None else None
        engine = server.service.engine
        if wait is None:
            # Default: wait for a worker still starting up (nothing queued: it answers as soon
            # as it is warm), but not behind a running job (2 s, then `workerBusy`).
            wait = engine is not None and not engine.ready and not engine.busy
        return lens_types.ServerInfoResponse(
            pid=os.getpid(),
            version=server.version,
            torch_imported="torch" in sys.modules,
            torch_mlir_imported="torch_mlir" in sys.modules,
            trusted=server.trusted,
            status=lens_types.StatusParams(**server.service.status),
            settings=server_settings(server.settings),
            engine=engine_stats(await server.service.stats(120.0 if wait else 2.0)),
        )


def server_settings(settings: Settings) -> lens_types.ServerSettings:
    """The effective settings as `serverInfo` answers them."""
    return lens_types.ServerSettings(
        default_target=settings.default_target,
        lens_targets=list(settings.lens_targets),
        diagnostics=settings.diagnostics,
        diagnostic_targets=list(settings.diagnostic_targets),
        timeout_seconds=settings.timeout_seconds,
        memory_limit_mb=settings.memory_limit_mb,
        example_inputs=dict(settings.example_inputs),
        pipelines=dict(settings.pipelines),
        strict_export=settings.strict_export,
    )


def engine_stats(stats: Mapping[str, Any] | None) -> lens_types.EngineStats | None:
    """The engine's counters (`LoweringService.stats`) as `serverInfo` answers them.

    A counter the protocol does not name is left out (logged): the answer stays its type.
    """
    if stats is None:
        return None
    known = {f.name for f in attrs.fields(lens_types.EngineStats)}
    unknown = sorted(set(stats) - known)
    if unknown:
        log.debug("engine counters not in the protocol: %s", ", ".join(unknown))
    return lens_types.EngineStats(**{k: v for k, v in stats.items() if k in known})


def _workspace_root(params: types.InitializeParams) -> str | None:
    if params.workspace_folders:
        return convert.uri_to_path(params.workspace_folders[0].uri)
    if params.root_uri:
        return convert.uri_to_path(params.root_uri)
    return params.root_path


async def pull_settings(server: LensServer) -> None:
    """Fetch `torchMlirLens` from the client (if it can answer) and apply it.

    A client without `workspace/configuration` (Neovim 0.7, Helix, ...) gets the settings it
    last pushed in `workspace/didChangeConfiguration` (over its `initializationOptions`).
    """
    pulled: Mapping[str, Any] | None = None
    if get_capability(server.client_capabilities, "workspace.configuration", False):
        try:
            items = [types.ConfigurationItem(section=SECTION)]
            answer = await asyncio.wait_for(
                server.workspace_configuration_async(types.ConfigurationParams(items=items)), 10
            )
            section = convert.json_object(answer[0]) if answer else None
            pulled = section_of(section)
            if pulled is None and section is not None:
                pulled = section  # the section itself, nothing set yet: {}
        except Exception as exc:
            log.warning("could not read the workspace configuration: %s", exc)
    apply_settings(server, pulled if pulled is not None else server.pushed_settings)


def apply_settings(
    server: LensServer, client_settings: Mapping[str, Any] | None, *, initial: bool = False
) -> None:
    """Make new settings effective: engine limits, caches, lenses and diagnostics."""
    new, problems = effective_settings(server.init_settings, client_settings,
                                       server.workspace_root)
    for problem in problems:
        log.warning(problem)
    old, server.settings = server.settings, new
    if initial or old == new:
        return
    log.info("settings changed")
    server.service.update_config()
    results_changed = old.results_key() != new.results_key()
    for doc in server.store:
        if results_changed:
            doc.forget_results()
            doc.forget_modules()
    diagnostics.recheck_all(server, lowering=results_changed or _checks_changed(old, new))
    server.refresh_lenses()  # lens targets, default target or inputs may have changed


def _checks_changed(old: Any, new: Any) -> bool:
    return bool(
        old.check_targets != new.check_targets or old.diagnostics != new.diagnostics
    )

"""`torchMlirLens/serverInfo` (request) `{waitForWorker?}` → `ServerInfoResponse` (`protocol.lsp`):
`{pid, version, torchImported, torchMlirImported, trusted, status, settings, engine}`;
`settings` the effective `ServerSettings`, `engine` null without a worker, else
`EngineStats`: `{restarts, ready, busy, workerPid, earlyPid}` plus the worker's `{jobsRun,
exportsRun, cachedPrograms, pid, cacheEntries, cacheHits}`. The worker answers between jobs
only: by default the request waits for a worker that is still starting, but only 2 s behind a
running job (then `workerBusy: true`); `waitForWorker: true` always waits, `false` never more
than 2 s. Tests, benchmarks and `:TorchMlirInfo`-like commands use it.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

from torch_mlir_lens.lsp.state.settings import Settings
from torch_mlir_lens.protocol import lsp as lens_types

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)


async def server_info(session: Session,
        params: lens_types.ServerInfoParams | None) -> lens_types.ServerInfoResponse:
    """`torchMlirLens/serverInfo`: the server's and the worker's state."""
    wait = params.wait_for_worker if params is not None else None
    engine = session.host.engine
    if wait is None:
        # Default: wait for a worker still starting up (nothing queued: it answers as soon
        # as it is warm), but not behind a running job (2 s, then `workerBusy`).
        wait = engine is not None and not engine.ready and not engine.busy
    return lens_types.ServerInfoResponse(
        pid=os.getpid(),
        version=session.version,
        torch_imported="torch" in sys.modules,
        torch_mlir_imported="torch_mlir" in sys.modules,
        trusted=session.trusted,
        trusted_folders=sorted(session.trust.roots),
        status=lens_types.StatusParams(**session.host.status),
        settings=server_settings(session.settings),
        engine=await session.host.stats(120.0 if wait else 2.0),
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
        cache_size_mb=settings.cache_size_mb,
        iree_archs=dict(settings.iree_archs),
    )

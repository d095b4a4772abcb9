"""Life cycle: initialize, initialized, shutdown.

- `initialize` reads the workspace's folders and `initializationOptions` (`trusted`,
  `trustedFolders`, `trustOpenedDocuments`, `settings`): trust is `state/trust.py`'s,
  applying settings `checks/state_changes.py`'s.
- `initialized` starts the lowering worker in the background (trusted workspaces only), pulls
  the settings and watches the project's pyproject.toml.
- `shutdown` stops the worker.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from torch_mlir_lens.lsp.checks import disk_watch, state_changes
from torch_mlir_lens.lsp.features import project_config
from torch_mlir_lens.lsp.state.settings import section_of
from torch_mlir_lens.lsp.wire import convert

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)


def on_initialize(session: Session, params: types.InitializeParams) -> None:
    """`initialize`: the folders, the trust statement, the first settings."""
    options = convert.json_object(params.initialization_options) or {}
    folders = _workspace_folders(params)
    session.start(section_of(options.get("settings")) or {}, folders)
    # A client that says nothing about trust gets none; trust is per folder: lsp/state/trust.py.
    named = options.get("trustedFolders")
    trusted_folders = convert.folder_paths(named)
    if named is not None and trusted_folders is None:
        log.warning("trustedFolders is not a list of folder URIs: no folder is trusted")
        trusted_folders = []  # never wider than what the client meant
    session.trust.initialize(options.get("trusted"), folders, trusted_folders,
                            options.get("trustOpenedDocuments"))
    if not session.trusted:
        session.host.discard_prespawned()  # spawned before we knew: no user code ran
    state_changes.apply_settings(session, None, initial=True)


def on_initialized(session: Session, params: types.InitializedParams) -> None:
    """Start the worker (trusted only), then pull the settings and watch the project's files."""
    session.mark_initialized()
    log.info(
        "torch-mlir-lens %s (pid %d, trusted=%s)", session.version, os.getpid(),
        session.trusted,
    )
    if not session.trusted:
        state_changes.announce_untrusted(session)
    else:
        session.host.start()
    session.background(_settle(session))
    session.background(disk_watch.watch(session))  # changes on disk nobody reports


async def _settle(session: Session) -> None:
    await state_changes.pull_settings(session)
    await project_config.watch(session)


async def on_shutdown(session: Session, params: Any) -> None:
    """`shutdown`: stop the worker."""
    await session.host.stop()


def _workspace_folders(params: types.InitializeParams) -> list[str]:
    """The workspace's folders as paths (the first is the root relative settings use)."""
    if params.workspace_folders:
        paths = [convert.uri_to_path(f.uri) for f in params.workspace_folders]
        return [p for p in paths if p]
    root = convert.uri_to_path(params.root_uri) if params.root_uri else params.root_path
    return [root] if root else []

"""Files changed on disk: the workspace's pyproject.toml (`[tool.torch-mlir-lens]`), re-read
when it changes, and Python sources, whose readers' answers go (`state_changes.files_saved`).

The settings themselves are merged in `settings.effective_settings` (the project's keys win
over the editor's, so the editor and `torch-mlir-lens check` in CI agree). Here: ask the
client to watch `**/pyproject.toml` and `**/*.py` (dynamic registration, where the client
supports it); `configuration.py` acts when one changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens.lsp.wire import convert

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)

WATCH_ID = "torchMlirLens/pyproject"
GLOB = "**/pyproject.toml"
SOURCES_GLOB = "**/*.py"


def changed(params: types.DidChangeWatchedFilesParams) -> bool:
    """Whether a watched-files notification concerns a pyproject.toml (`configuration.py`
    re-reads the settings then)."""
    return any(change.uri.endswith("/pyproject.toml") for change in params.changes)


def changed_sources(params: types.DidChangeWatchedFilesParams) -> list[str]:
    """The paths of the Python sources a watched-files notification names."""
    paths = (convert.uri_to_path(change.uri) for change in params.changes
             if change.uri.endswith(".py"))
    return [p for p in paths if p]


async def watch(session: Session) -> None:
    """Ask the client to report pyproject.toml changes (no-op if it cannot register)."""
    if not session.client.supports("workspace.did_change_watched_files.dynamic_registration"):
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=GLOB),
                  types.FileSystemWatcher(glob_pattern=SOURCES_GLOB)])
    registration = types.Registration(
        id=WATCH_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options)
    try:
        await session.client.register_capability(
            types.RegistrationParams(registrations=[registration]))
    except Exception as exc:  # a client that refuses: settings still apply at start-up
        log.warning("could not watch pyproject.toml: %s", exc)

"""Settings: `workspace/didChangeConfiguration`, the project's pyproject.toml, applying them.

`initialized` and every `workspace/didChangeConfiguration` pull `workspace/configuration`, so a
changed setting takes effect without a restart; a client that cannot answer it gets the
settings it pushed last (`settings.py` has the layers and their order). What a change then
does is `checks/state_changes.py`'s.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens.lsp.checks import state_changes
from torch_mlir_lens.lsp.features import project_config
from torch_mlir_lens.lsp.state.settings import section_of
from torch_mlir_lens.lsp.wire import convert

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.checking_server import CheckingServer

log = logging.getLogger(__name__)


def register(server: CheckingServer) -> None:
    """Register the configuration handlers."""

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def on_watched(params: types.DidChangeWatchedFilesParams) -> None:
        sources = project_config.changed_sources(params)
        if sources:
            state_changes.files_saved(server, sources)
        if project_config.changed(params):
            log.info("pyproject.toml changed: reading [tool.torch-mlir-lens] again")
            await state_changes.pull_settings(server)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(params: types.DidChangeConfigurationParams) -> None:
        payload = convert.json_object(params.settings)
        # Never trust from here: what a client pushes as configuration may come from the
        # workspace itself (Emacs sends a project's .dir-locals.el eglot-workspace-configuration,
        # which it applies without asking), and a workspace must not trust itself.
        pushed = section_of(payload)
        if pushed is not None:  # kept: a client without workspace/configuration sends no more
            server.remember_pushed(pushed)
        await state_changes.pull_settings(server)

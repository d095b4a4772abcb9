"""Settings: `workspace/didChangeConfiguration`, the project's pyproject.toml, applying them.

`initialized` and every `workspace/didChangeConfiguration` pull `workspace/configuration`, so a
changed setting takes effect without a restart; a client that cannot answer it gets the
settings it pushed last (`settings.py` has the layers and their order).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.capabilities import get_capability

from torch_mlir_lens.lsp.checks import check_triggers
from torch_mlir_lens.lsp.features import project_config
from torch_mlir_lens.lsp.state.settings import SECTION, section_of
from torch_mlir_lens.lsp.wire import convert

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.checking_server import CheckingServer

log = logging.getLogger(__name__)


def register(server: CheckingServer) -> None:
    """Register the configuration handlers."""

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
            server.remember_pushed(pushed)
        await pull_settings(server)


async def pull_settings(server: CheckingServer) -> None:
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
    server: CheckingServer, client_settings: Mapping[str, Any] | None, *, initial: bool = False
) -> None:
    """Make new settings effective: engine limits, caches, lenses and diagnostics."""
    old, new, problems = server.apply_settings(client_settings)
    for problem in problems:
        log.warning(problem)
    if initial or old == new:
        return
    log.info("settings changed")
    server.host.update_config()
    results_changed = old.results_key() != new.results_key()
    for doc in server.store:
        if results_changed:
            doc.forget_results()
            doc.forget_modules()
    check_triggers.recheck_all(server, lowering=results_changed or _checks_changed(old, new))
    server.refresh_lenses()  # lens targets, default target or inputs may have changed


def _checks_changed(old: Any, new: Any) -> bool:
    return bool(
        old.check_targets != new.check_targets or old.diagnostics != new.diagnostics
    )

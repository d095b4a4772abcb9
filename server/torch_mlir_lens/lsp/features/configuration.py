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
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)


def on_watched(session: Session, params: types.DidChangeWatchedFilesParams) -> None:
    """Files changed on disk: the answers that read a source go; a pyproject.toml's table is
    read again (in the background: the client is asked for its settings first)."""
    sources = project_config.changed_sources(params)
    if sources:
        state_changes.files_saved(session, sources)
    if project_config.changed(params):
        log.info("pyproject.toml changed: reading [tool.torch-mlir-lens] again")
        session.background(state_changes.pull_settings(session))


def on_configuration(session: Session, params: types.DidChangeConfigurationParams) -> None:
    """The client's settings changed: keep what it pushed, then ask for them and apply."""
    payload = convert.json_object(params.settings)
    # Never trust from here: what a client pushes as configuration may come from the
    # workspace itself (Emacs sends a project's .dir-locals.el eglot-workspace-configuration,
    # which it applies without asking), and a workspace must not trust itself.
    pushed = section_of(payload)
    if pushed is not None:  # kept: a client without workspace/configuration sends no more
        session.remember_pushed(pushed)
    session.background(state_changes.pull_settings(session))

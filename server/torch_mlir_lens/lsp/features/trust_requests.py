"""Trust: the `torchMlirLens/setTrusted` notification and command, workspace folders coming
and going, and what an untrusted server tells the user.

`initialize` takes the client's statement (`lifecycle.py`); no statement means untrusted, and
trust is per folder (`lsp/state/trust.py`). Trust can be granted or withdrawn later, without a
restart, by the notification (the VS Code client) or by the command (`workspace/executeCommand`,
for clients that can run a server command but not send a custom notification, e.g. Helix's
`:lsp-workspace-command`). Only the client can say it: nothing the workspace contains does. A
folder added to the workspace later runs nothing until the client trusts it too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from torch_mlir_lens.lsp.checks import check_triggers
from torch_mlir_lens.lsp.state.trust import UNTRUSTED
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.protocol import lsp as lens_types

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.checking_server import CheckingServer

log = logging.getLogger(__name__)

COMMAND_USAGE = 'expected one argument: {"trusted": true | false, "folders"?: [URI, ...]}'


def register(server: CheckingServer) -> None:
    """Register the notification, the command and the folder changes."""

    @server.feature(lens_types.SET_TRUSTED)
    def on_set_trusted(params: lens_types.SetTrustedParams) -> None:
        folders = folder_paths(params.folders)
        if params.folders is not None and folders is None:
            log.warning("ignored torchMlirLens/setTrusted: %s", COMMAND_USAGE)
            return
        set_trusted(server, params.trusted, folders)

    @server.command(lens_types.SET_TRUSTED_COMMAND)
    def set_trusted_command(*args: Any) -> lens_types.SetTrustedResponse:
        arg = args[0] if args else None
        trusted = arg.get("trusted") if isinstance(arg, dict) else None
        folders = arg.get("folders") if isinstance(arg, dict) else None
        if not isinstance(trusted, bool) or (
                folders is not None and folder_paths(folders) is None):
            raise JsonRpcInvalidParams(COMMAND_USAGE)
        set_trusted(server, trusted, folder_paths(folders))
        return lens_types.SetTrustedResponse(trusted=server.trusted)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def on_folders_changed(params: types.DidChangeWorkspaceFoldersParams) -> None:
        added = _paths(params.event.added)
        server.trust.folders_changed(added, _paths(params.event.removed))
        for folder in added:
            if not server.trust.covers(folder) and server.trust.first_refusal(folder):
                server.show(
                    f"Torch-MLIR Lens: the added folder {folder} is not trusted: no code of it "
                    "runs until your editor says it is trusted.", types.MessageType.Warning)


def folder_paths(value: object) -> list[str] | None:
    """Folders as the client names them (`file:` URIs or absolute paths) → paths; None unless
    a list of them (a relative path would be resolved against the server's own folder)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    paths = [convert.uri_to_path(v) if v.startswith("file:") else v for v in value]
    if not all(p and os.path.isabs(p) for p in paths):
        return None
    return [p for p in paths if p]


def _paths(folders: Sequence[types.WorkspaceFolder] | None) -> list[str]:
    paths = [convert.uri_to_path(f.uri) for f in folders or []]
    return [p for p in paths if p]


def announce_untrusted(server: CheckingServer) -> None:
    """Say once, and in the status, why nothing is lowered (and how to trust)."""
    server.host.set_status(UNTRUSTED, server.trust.detail)
    if server.first_untrusted_announcement():
        server.show(server.trust.announcement, types.MessageType.Warning)
    log.warning("%s", server.trust.detail)


def set_trusted(server: CheckingServer, trusted: bool, folders: list[str] | None = None) -> None:
    """Trust (or stop trusting) `folders` (every workspace folder when None); start or stop
    the worker as some trust exists or none is left, and check the open files again."""
    before = (server.trusted, frozenset(server.trust.roots))
    server.trust.state(trusted, folders)
    for doc in server.store:
        server.trust.document_opened(doc.path)
    if (server.trusted, frozenset(server.trust.roots)) == before:
        if not server.trusted:  # "unknown" may have become "not trusted": the status says so
            server.host.set_status(UNTRUSTED, server.trust.detail)
        return
    if server.trusted:
        log.info("trusted folders: %s", ", ".join(sorted(server.trust.roots)) or "(opened files)")
        server.host.start()
    else:
        server.background(server.host.stop())
        announce_untrusted(server)
    for doc in server.store:
        if not server.trust.covers(doc.path):
            doc.forget_results()
    check_triggers.recheck_all(server, lowering=True)

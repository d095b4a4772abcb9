"""Trust: the `torchMlirLens/setTrusted` notification and command, workspace folders coming
and going, and what an untrusted server tells the user.

`initialize` takes the client's statement (`lifecycle.py`); no statement means untrusted, and
trust is per folder (`lsp/state/trust.py`). Trust can be granted or withdrawn later, without a
restart, by the notification (the VS Code client) or by the command (`workspace/executeCommand`,
for clients that can run a server command but not send a custom notification, e.g. Helix's
`:lsp-workspace-command`). Only the client can say it: nothing the workspace contains does. A
folder added to the workspace later runs nothing until the client trusts it too. What a change
of trust does (the worker started or stopped, the files checked again) is
`checks/state_changes.py`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from torch_mlir_lens.lsp.checks import state_changes
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.protocol import lsp as lens_types

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)

COMMAND_USAGE = 'expected one argument: {"trusted": true | false, "folders"?: [URI, ...]}'


def on_set_trusted(session: Session, params: lens_types.SetTrustedParams) -> None:
    """`torchMlirLens/setTrusted`: trust or stop trusting folders."""
    folders = convert.folder_paths(params.folders)
    if params.folders is not None and folders is None:
        log.warning("ignored torchMlirLens/setTrusted: %s", COMMAND_USAGE)
        return
    state_changes.set_trusted(session, params.trusted, folders)


def set_trusted_command(session: Session, *args: Any) -> lens_types.SetTrustedResponse:
    """`torchMlirLens.setTrusted`: the same, as a command."""
    arg = args[0] if args else None
    trusted = arg.get("trusted") if isinstance(arg, dict) else None
    folders = arg.get("folders") if isinstance(arg, dict) else None
    if not isinstance(trusted, bool) or (
            folders is not None and convert.folder_paths(folders) is None):
        raise JsonRpcInvalidParams(COMMAND_USAGE)
    state_changes.set_trusted(session, trusted, convert.folder_paths(folders))
    return lens_types.SetTrustedResponse(trusted=session.trusted)


def on_folders_changed(session: Session, params: types.DidChangeWorkspaceFoldersParams) -> None:
    """`workspace/didChangeWorkspaceFolders`: added folders start untrusted."""
    added = _paths(params.event.added)
    removed = _paths(params.event.removed)
    session.trust.folders_changed(added, removed)
    session.folders_changed(added, removed)
    session.apply_settings(session.client_settings)  # a removed folder's project goes
    for folder in added:
        if not session.trust.covers(folder) and session.trust.first_refusal(folder):
            session.show(
                f"Torch-MLIR Lens: the added folder {folder} is not trusted: no code of it "
                "runs until your editor says it is trusted.", types.MessageType.Warning)


def _paths(folders: Sequence[types.WorkspaceFolder] | None) -> list[str]:
    paths = [convert.uri_to_path(f.uri) for f in folders or []]
    return [p for p in paths if p]

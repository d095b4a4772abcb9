"""Workspace trust: the `torchMlirLens/setTrusted` notification and command, and what an
untrusted server tells the user.

`initialize` takes the client's `initializationOptions.trusted` (`status.py`); no statement
means untrusted (`lsp/trust.py`). Trust can be granted or withdrawn later, without a restart,
by the notification (the VS Code client) or by the command (`workspace/executeCommand`, for
clients that can run a server command but not send a custom notification, e.g. Helix's
`:lsp-workspace-command`). Only the client can say it: nothing the workspace contains does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from torch_mlir_lens.lsp.features import diagnostics
from torch_mlir_lens.lsp.trust import UNTRUSTED
from torch_mlir_lens.protocol import lsp as lens_types

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.server import LensServer

log = logging.getLogger(__name__)


def register(server: LensServer) -> None:
    """Register the notification and the command."""

    @server.feature(lens_types.SET_TRUSTED)
    def on_set_trusted(params: lens_types.SetTrustedParams) -> None:
        set_trusted(server, params.trusted)

    @server.command(lens_types.SET_TRUSTED_COMMAND)
    def set_trusted_command(*args: Any) -> lens_types.SetTrustedResponse:
        arg = args[0] if args else None
        trusted = arg.get("trusted") if isinstance(arg, dict) else None
        if not isinstance(trusted, bool):
            raise JsonRpcInvalidParams('expected one argument: {"trusted": true | false}')
        set_trusted(server, trusted)
        return lens_types.SetTrustedResponse(trusted=server.trusted)


def announce_untrusted(server: LensServer) -> None:
    """Say once, and in the status, why nothing is lowered (and how to trust)."""
    server.host.set_status(UNTRUSTED, server.trust.detail)
    if not server.untrusted_announced:
        server.untrusted_announced = True
        server.show(server.trust.announcement, types.MessageType.Warning)
    log.warning("%s", server.trust.detail)


def set_trusted(server: LensServer, trusted: bool) -> None:
    """Turn user-code execution on (start the worker, check open files) or off."""
    before = server.trusted
    server.trust.state(trusted)
    if trusted == before:
        if not trusted:  # "unknown" may have become "not trusted": the status says which
            server.host.set_status(UNTRUSTED, server.trust.detail)
        return
    if trusted:
        log.info("workspace trusted: starting the lowering worker")
        server.host.start()
        diagnostics.recheck_all(server, lowering=True)
    else:
        server.background(server.host.stop())
        announce_untrusted(server)
        for doc in server.store:
            doc.forget_results()
        diagnostics.recheck_all(server, lowering=True)

"""The session: the shared state plus what checks a document, one plain object.

It owns the state (`state/session.py`: settings, workspace, trust, documents, the client),
the engine host (`engine_host.py`, the one door to user code) and each document's pending
check (`pending.py`). Every handler of `server.py`'s table is a function of it and of the
request's parameters; nothing here knows the transport.
"""

from __future__ import annotations

from torch_mlir_lens.lsp.checks.engine_host import EngineHost
from torch_mlir_lens.lsp.checks.pending import PendingChecks
from torch_mlir_lens.lsp.state.session import SessionState
from torch_mlir_lens.lsp.wire.client import Client


class Session(SessionState):
    """The session's state, plus the engine (behind the trust gate) and the checks due."""

    def __init__(self, client: Client, name: str, version: str) -> None:
        super().__init__(client, name, version)
        self.host = EngineHost(self)
        self.pending_checks = PendingChecks()  # each document's diagnostics check under way

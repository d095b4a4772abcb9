"""The session with what checks a document: the engine host and each document's pending check.

This is the server the features are given (`features/`); `server.py` only adds the
protocol's options and registers the features on it.
"""

from __future__ import annotations

from typing import Any

from torch_mlir_lens.lsp.checks.engine_host import EngineHost
from torch_mlir_lens.lsp.checks.pending import PendingChecks
from torch_mlir_lens.lsp.state.session import Session


class CheckingServer(Session):
    """The session, plus the engine (behind the trust gate) and the diagnostics checks due."""

    def __init__(self, name: str, version: str, **pygls_options: Any) -> None:
        super().__init__(name, version, **pygls_options)
        self.host = EngineHost(self)
        self.pending_checks = PendingChecks()  # each document's diagnostics check under way

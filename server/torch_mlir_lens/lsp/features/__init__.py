"""LSP features, one module each; `register_all` wires them onto a server."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.server import LensServer


def register_all(server: LensServer) -> None:
    """Register every feature's handlers on `server`."""
    from torch_mlir_lens.lsp.features import (
        code_actions,
        code_lens,
        commands,
        configuration,
        custom_requests,
        diagnostics,
        export_code,
        hover,
        lifecycle,
        notebook_sync,
        server_info,
        sync,
        trust,
    )

    for feature in (lifecycle, configuration, trust, server_info, sync, notebook_sync, diagnostics,
                    code_lens, hover, code_actions, commands, export_code, custom_requests):
        feature.register(server)

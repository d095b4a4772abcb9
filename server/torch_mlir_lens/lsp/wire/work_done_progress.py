"""Work-done progress around a block of work: the client's token, or one we create."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.capabilities import get_capability

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer


@contextlib.asynccontextmanager
async def progress(
    server: LanguageServer,
    title: str,
    message: str | None = None,
    *,
    token: types.ProgressToken | None = None,
    enabled: bool = True,
) -> AsyncIterator[None]:
    """Report `title` as work-done progress while the block runs.

    With the client's `token` (a request's `workDoneToken`), or a token we create when
    `enabled` and the client supports it; nothing at all otherwise, or if it refuses.
    """
    supported = get_capability(server.client_capabilities, "window.work_done_progress", False)
    if token is None and enabled and supported:
        token = f"torch-mlir-lens-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(server.work_done_progress.create_async(token), 5)
        except Exception:  # the client refused: go on without progress
            token = None
    if token is None:
        yield
        return
    server.work_done_progress.begin(
        token, types.WorkDoneProgressBegin(title=title, message=message, cancellable=False)
    )
    try:
        yield
    finally:
        server.work_done_progress.end(token, types.WorkDoneProgressEnd())
        server.work_done_progress.tokens.pop(token, None)

"""Work-done progress around a block of work: the client's token, or one we create."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.wire.client import Client


@contextlib.asynccontextmanager
async def progress(
    client: Client,
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
    supported = client.supports("window.work_done_progress")
    if token is None and enabled and supported:
        token = f"torch-mlir-lens-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(client.progress.create_async(token), 5)
        except Exception:  # the client refused: go on without progress
            token = None
    if token is None:
        yield
        return
    client.progress.begin(
        token, types.WorkDoneProgressBegin(title=title, message=message, cancellable=False)
    )
    try:
        yield
    finally:
        client.progress.end(token, types.WorkDoneProgressEnd())
        client.progress.tokens.pop(token, None)

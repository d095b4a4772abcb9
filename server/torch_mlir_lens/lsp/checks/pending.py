"""Each document's pending check: one under way per document, debounced; a newer one replaces
it, closing the document cancels it. Not a scheduler of lowerings: a check hands its
lowerings to the engine, which shares, supersedes and cancels them (`engine/scheduler.py`).

A check that replaces another for the same text keeps owing the lowering the first one was
going to do (e.g. settings pulled just after the file opened must not drop the open's check).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens.lsp.document import Document

log = logging.getLogger(__name__)


@dataclass
class PendingCheck:
    """The diagnostics check under way for a document."""

    task: asyncio.Task[None]
    generation: int  # the text it checks
    lowering: bool  # whether it lowers the modules, or only publishes static findings

    def owes_lowering(self, generation: int) -> bool:
        """Whether a check replacing this one for text `generation` must lower."""
        return self.lowering and self.generation == generation and not self.task.done()


CheckRun = Callable[[Document, bool], Coroutine[Any, Any, None]]


class PendingChecks:
    """The checks under way, by document URI (debounced, replaced, cancelled on close)."""

    def __init__(self) -> None:
        self._pending: dict[str, PendingCheck] = {}

    def schedule(self, doc: Document, run: CheckRun, *, lowering: bool,
                 delay: float = 0.0) -> None:
        """(Re)start the check of `doc` after `delay`, cancelling the one under way."""
        previous = self._pending.pop(doc.uri, None)
        if previous is not None:
            # Still owed: the check that replaces it for the same text must not drop its
            # lowering.
            lowering = lowering or previous.owes_lowering(doc.generation)
            previous.task.cancel()
        task = asyncio.ensure_future(_later(doc, run, lowering, delay))
        pending = PendingCheck(task, doc.generation, lowering)
        self._pending[doc.uri] = pending
        task.add_done_callback(lambda _: self._done(doc.uri, pending))

    def cancel(self, uri: str) -> None:
        """Stop the check of a closed document."""
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.task.cancel()

    def _done(self, uri: str, pending: PendingCheck) -> None:
        if self._pending.get(uri) is pending:
            del self._pending[uri]


async def _later(doc: Document, run: CheckRun, lowering: bool, delay: float) -> None:
    if delay:
        await asyncio.sleep(delay)
    try:
        await run(doc, lowering)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("checking %s failed", doc.uri)

"""When a document's diagnostics are checked: on open, change, save, close, settings or trust.

On open and on save by default; `diagnostics: "onType"` also checks ~500 ms after the last
edit; `"off"` publishes nothing. Between checks, published diagnostics follow their lines as
the text changes and vanish when their lines are edited (`lsp/document`). Each trigger hands
the document to `pending.py` (one check under way per document: debounce, replace, cancel),
which runs `document_check.py` once the delay is over; the engine schedules the lowerings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch_mlir_lens.lsp.checks.document_check import check_document
from torch_mlir_lens.lsp.checks.publish import publish
from torch_mlir_lens.lsp.document import Document

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

__all__ = ["on_change", "on_close", "on_open", "on_save", "recheck_all", "schedule"]

DEBOUNCE_S = 0.5


def on_open(session: Session, doc: Document) -> None:
    if session.settings.diagnostics != "off":
        schedule(session, doc, lowering=True)


def on_change(session: Session, doc: Document) -> None:
    mode = session.settings.diagnostics
    if mode == "onType":
        schedule(session, doc, lowering=True, delay=DEBOUNCE_S)
    elif mode != "off":
        # Stale lowerings stop; static findings and moved diagnostics publish at once.
        schedule(session, doc, lowering=False)


def on_save(session: Session, doc: Document) -> None:
    if session.settings.diagnostics != "off":
        schedule(session, doc, lowering=True)


def on_close(session: Session, doc: Document) -> None:
    session.pending_checks.cancel(doc.uri)
    doc.clear_diagnostics()
    doc.forget_cells()  # a notebook's cells hold its diagnostics: empty each of them
    publish(session, doc)


def recheck_all(session: Session, *, lowering: bool) -> None:
    """Re-publish every open document (settings or trust changed)."""
    for doc in session.store:
        if session.settings.diagnostics == "off":
            doc.clear_diagnostics()
            publish(session, doc)
        else:
            schedule(session, doc, lowering=lowering)


def schedule(session: Session, doc: Document, *, lowering: bool,
             delay: float = 0.0) -> None:
    """(Re)start the check of a document, cancelling the one under way (debounce)."""

    async def run(doc: Document, lowering: bool) -> None:
        await check_document(session, doc, lowering=lowering)

    session.pending_checks.schedule(doc, run, lowering=lowering, delay=delay)

"""Diagnostics (source `torch-mlir`): unsupported ops per backend, export and worker failures,
modules without example inputs.

When: on open and on save by default; `diagnostics: "onType"` also checks ~500 ms after the
last edit; `"off"` publishes nothing. Between checks, published diagnostics follow their
lines as the text changes and vanish when their lines are edited (`lsp/document`).
One check of a module is one export in two engine calls (`staging.py`: the default target,
then the other diagnosed backends from the worker's cached export), shared with hover and
the lenses; a module's diagnostics are published once all its backends are known.

- `scheduler.py`: one check under way per document (debounce, replace, cancel);
- `document_check.py`: what a document's check does (static findings, then each module);
- `staging.py`: a module's check in two stages, recorded on its document;
- `records.py`: findings → diagnostic records; `publish.py`: records → LSP diagnostics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.lsp.features.diagnostics.document_check import check_document
from torch_mlir_lens.lsp.features.diagnostics.publish import SOURCE, publish

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.server import LensServer

__all__ = ["SOURCE", "on_change", "on_close", "on_open", "on_save", "publish", "recheck_all",
           "schedule"]

DEBOUNCE_S = 0.5


def register(server: LensServer) -> None:
    """Nothing to register: document sync and settings changes call into this module."""


def on_open(server: LensServer, doc: Document) -> None:
    if server.settings.diagnostics != "off":
        schedule(server, doc, lowering=True)


def on_change(server: LensServer, doc: Document) -> None:
    mode = server.settings.diagnostics
    if mode == "onType":
        schedule(server, doc, lowering=True, delay=DEBOUNCE_S)
    elif mode != "off":
        # Stale lowerings stop; static findings and moved diagnostics publish at once.
        schedule(server, doc, lowering=False)


def on_save(server: LensServer, doc: Document) -> None:
    if server.settings.diagnostics != "off":
        schedule(server, doc, lowering=True)


def on_close(server: LensServer, doc: Document) -> None:
    server.checks.cancel(doc.uri)
    doc.clear_diagnostics()
    if doc.notebook is not None:  # its cells hold its diagnostics: empty each of them
        doc.notebook.spans.clear()
        doc.notebook.problems.clear()
    publish(server, doc)


def recheck_all(server: LensServer, *, lowering: bool) -> None:
    """Re-publish every open document (settings or trust changed)."""
    for doc in server.store:
        if server.settings.diagnostics == "off":
            doc.clear_diagnostics()
            publish(server, doc)
        else:
            schedule(server, doc, lowering=lowering)


def schedule(server: LensServer, doc: Document, *, lowering: bool,
             delay: float = 0.0) -> None:
    """(Re)start the check of a document, cancelling the one under way (debounce)."""

    async def run(doc: Document, lowering: bool) -> None:
        await check_document(server, doc, lowering=lowering)

    server.checks.schedule(doc, run, lowering=lowering, delay=delay)

"""Document synchronisation: keep `DocumentStore` in step with the editor's buffers.

pygls applies the edits to its own workspace first; this mirrors the resulting text into
the document state (which drops its results and moves its diagnostics) and lets the
diagnostics feature decide whether to check now, later or not at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens.lsp.checks import check_triggers, state_changes

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.checking_server import CheckingServer


CELL_SCHEME = "vscode-notebook-cell:"


def _notebook_cell(server: CheckingServer, uri: str) -> bool:
    """A notebook's cell: synced through notebookDocument/* (features/notebook_sync.py). A client
    that also sends text-document sync for it must not make it a document of its own, whose
    (empty) diagnostics would replace the notebook's on that cell."""
    if uri.startswith(CELL_SCHEME):
        return True
    doc = server.store.get(uri)
    return doc is not None and doc.notebook is not None and doc.uri != uri


def register(server: CheckingServer) -> None:
    """Register the text-document sync handlers."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        if _notebook_cell(server, item.uri):
            return
        doc = server.store.open(item.uri, item.text, item.version)
        server.trust.document_opened(doc.path)
        check_triggers.on_open(server, doc)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if _notebook_cell(server, uri):
            return
        text = server.workspace.get_text_document(uri).source
        doc = server.store.get(uri)
        if doc is None:
            doc = server.store.open(uri, text, params.text_document.version)
        else:
            doc.update(text, params.text_document.version, params.content_changes)
        server.host.invalidate(doc.path)
        check_triggers.on_change(server, doc)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        if _notebook_cell(server, params.text_document.uri):
            return
        doc = server.store.get(params.text_document.uri)
        if doc is not None:
            check_triggers.on_save(server, doc)
            if doc.path:  # files that import it (in any folder) lower differently now
                state_changes.files_saved(server, [doc.path])

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        if _notebook_cell(server, params.text_document.uri):
            return
        doc = server.store.close(params.text_document.uri)
        if doc is not None:
            check_triggers.on_close(server, doc)

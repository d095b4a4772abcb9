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
    from torch_mlir_lens.lsp.checks.session import Session


CELL_SCHEME = "vscode-notebook-cell:"


def _notebook_cell(session: Session, uri: str) -> bool:
    """A notebook's cell: synced through notebookDocument/* (features/notebook_sync.py). A client
    that also sends text-document sync for it must not make it a document of its own, whose
    (empty) diagnostics would replace the notebook's on that cell."""
    if uri.startswith(CELL_SCHEME):
        return True
    doc = session.store.get(uri)
    return doc is not None and doc.notebook is not None and doc.uri != uri


def did_open(session: Session, params: types.DidOpenTextDocumentParams) -> None:
    """`textDocument/didOpen`: keep the document; its check follows."""
    item = params.text_document
    if _notebook_cell(session, item.uri):
        return
    doc = session.store.open(item.uri, item.text, item.version)
    session.trust.document_opened(doc.path)
    check_triggers.on_open(session, doc)


def did_change(session: Session, params: types.DidChangeTextDocumentParams) -> None:
    """`textDocument/didChange`: the new text; its results move or go."""
    uri = params.text_document.uri
    if _notebook_cell(session, uri):
        return
    text = session.client.text_of(uri)
    doc = session.store.get(uri)
    if doc is None:
        doc = session.store.open(uri, text, params.text_document.version)
    else:
        doc.update(text, params.text_document.version, params.content_changes)
    session.host.invalidate(doc.path)
    check_triggers.on_change(session, doc)


def did_save(session: Session, params: types.DidSaveTextDocumentParams) -> None:
    """`textDocument/didSave`: check it; files that import it lower differently now."""
    if _notebook_cell(session, params.text_document.uri):
        return
    doc = session.store.get(params.text_document.uri)
    if doc is not None:
        check_triggers.on_save(session, doc)
        if doc.path:  # files that import it (in any folder) lower differently now
            state_changes.files_saved(session, [doc.path])


def did_close(session: Session, params: types.DidCloseTextDocumentParams) -> None:
    """`textDocument/didClose`: forget it."""
    if _notebook_cell(session, params.text_document.uri):
        return
    doc = session.store.close(params.text_document.uri)
    if doc is not None:
        check_triggers.on_close(session, doc)

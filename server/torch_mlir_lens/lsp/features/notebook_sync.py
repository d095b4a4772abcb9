"""Notebook synchronisation (LSP 3.17 `notebookDocument/*`): a notebook is one document.

pygls keeps the notebook and its cell documents in its workspace; after each notification this
rebuilds the notebook's program (its Python code cells in order, `source/notebook_program.py`)
and hands it to the document state as the new text, so lenses, hovers, diagnostics and
lowering work on it as on a file. `lsp/checks/cell_positions.py` maps their answers back to the
cells.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens.lsp.checks import check_triggers
from torch_mlir_lens.lsp.checks.publish import publish
from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.source.notebook_program import Cell, Program, synthesize

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.checking_server import CheckingServer

# What the server asks the client to sync: notebooks of any type (other Jupyter front ends
# name theirs differently) with all their cells: markdown cells add no lines, but they count
# in the cell numbers people read (`NOTEBOOK.ipynb:CELL:LINE`, as the CLI counts).
SYNC_OPTIONS = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithNotebook(notebook="*")],
    save=True,
)


def register(server: CheckingServer) -> None:
    """Register the notebook-document sync handlers."""

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        program = program_of(server, uri)
        if program is None:
            return
        doc = server.store.open(uri, program.text, params.notebook_document.version)
        server.trust.document_opened(doc.path)
        _adopt(server, doc, program)
        check_triggers.on_open(server, doc)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        program = program_of(server, uri)
        doc = server.store.get(uri)
        if program is None:
            return
        if doc is None:
            doc = server.store.open(uri, program.text, params.notebook_document.version)
        elif program.text != doc.text:
            # No content ranges: the cells' edits are in cell lines; documents.py diffs.
            doc.update(program.text, params.notebook_document.version)
        else:  # metadata, outputs, markdown, or cells moved: the same program
            moved = doc.notebook is None or program.spans != doc.notebook.spans
            doc.set_version(params.notebook_document.version)
            _adopt(server, doc, program)
            if moved:
                publish(server, doc)
            return
        _adopt(server, doc, program)
        server.host.invalidate(doc.path)
        check_triggers.on_change(server, doc)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveNotebookDocumentParams) -> None:
        doc = server.store.get(params.notebook_document.uri)
        if doc is not None:
            check_triggers.on_save(server, doc)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseNotebookDocumentParams) -> None:
        doc = server.store.close(params.notebook_document.uri)
        if doc is not None:
            check_triggers.on_close(server, doc)


def program_of(server: CheckingServer, uri: str) -> Program | None:
    """The program of the notebook `uri` as pygls's workspace holds it now."""
    notebook = server.workspace.get_notebook_document(notebook_uri=uri)
    if notebook is None:
        return None
    cells = []
    for cell in notebook.cells:
        text = server.workspace.get_text_document(cell.document)
        kind = "code" if cell.kind == types.NotebookCellKind.Code else "markdown"
        cells.append(Cell(source=text.source, kind=kind, language=text.language_id or "python",
                          uri=cell.document))
    return synthesize(cells)


def _adopt(server: CheckingServer, doc: Document, program: Program) -> None:
    doc.adopt_program(program)
    server.store.set_cells(doc.uri, [s.uri for s in program.spans if s.uri])

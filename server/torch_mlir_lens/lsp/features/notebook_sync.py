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
    from torch_mlir_lens.lsp.checks.session import Session

# What the server asks the client to sync: notebooks of any type (other Jupyter front ends
# name theirs differently) with all their cells: markdown cells add no lines, but they count
# in the cell numbers people read (`NOTEBOOK.ipynb:CELL:LINE`, as the CLI counts).
SYNC_OPTIONS = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithNotebook(notebook="*")],
    save=True,
)


def did_open(session: Session, params: types.DidOpenNotebookDocumentParams) -> None:
    """`notebookDocument/didOpen`: the notebook as one program."""
    uri = params.notebook_document.uri
    program = program_of(session, uri)
    if program is None:
        return
    doc = session.store.open(uri, program.text, params.notebook_document.version)
    session.trust.document_opened(doc.path)
    _adopt(session, doc, program)
    check_triggers.on_open(session, doc)


def did_change(session: Session, params: types.DidChangeNotebookDocumentParams) -> None:
    """`notebookDocument/didChange`: the program again; its check follows."""
    uri = params.notebook_document.uri
    program = program_of(session, uri)
    doc = session.store.get(uri)
    if program is None:
        return
    if doc is None:
        doc = session.store.open(uri, program.text, params.notebook_document.version)
    elif program.text != doc.text:
        # No content ranges: the cells' edits are in cell lines; documents.py diffs.
        doc.update(program.text, params.notebook_document.version)
    else:  # metadata, outputs, markdown, or cells moved: the same program
        moved = doc.notebook is None or program.spans != doc.notebook.spans
        doc.set_version(params.notebook_document.version)
        _adopt(session, doc, program)
        if moved:
            publish(session, doc)
        return
    _adopt(session, doc, program)
    session.host.invalidate(doc.path)
    check_triggers.on_change(session, doc)


def did_save(session: Session, params: types.DidSaveNotebookDocumentParams) -> None:
    """`notebookDocument/didSave`: check it."""
    doc = session.store.get(params.notebook_document.uri)
    if doc is not None:
        check_triggers.on_save(session, doc)


def did_close(session: Session, params: types.DidCloseNotebookDocumentParams) -> None:
    """`notebookDocument/didClose`: forget it, clear its cells' diagnostics."""
    doc = session.store.close(params.notebook_document.uri)
    if doc is not None:
        check_triggers.on_close(session, doc)


def program_of(session: Session, uri: str) -> Program | None:
    """The program of the notebook `uri` as pygls's workspace holds it now."""
    notebook = session.client.notebook(uri)
    if notebook is None:
        return None
    cells = []
    for cell in notebook.cells:
        kind = "code" if cell.kind == types.NotebookCellKind.Code else "markdown"
        cells.append(Cell(source=session.client.text_of(cell.document), kind=kind,
                          language=session.client.language_of(cell.document) or "python",
                          uri=cell.document))
    return synthesize(cells)


def _adopt(session: Session, doc: Document, program: Program) -> None:
    doc.adopt_program(program)
    session.store.set_cells(doc.uri, [s.uri for s in program.spans if s.uri])

"""The open documents by URI, and transient documents read from disk for one request."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from torch_mlir_lens.lsp.document.document import Document
from torch_mlir_lens.lsp.wire.convert import uri_to_path
from torch_mlir_lens.source.notebook_program import NotebookError, is_notebook, read_program
from torch_mlir_lens.source.onnx_files import is_onnx, stand_in_text
from torch_mlir_lens.system.reading import read_text


class DocumentStore:
    """The open documents by URI."""

    def __init__(self) -> None:
        self._docs: dict[str, Document] = {}
        self._cells: dict[str, str] = {}  # notebook cell URI → the notebook's URI

    def set_cells(self, notebook_uri: str, cell_uris: Sequence[str]) -> None:
        """Make `get(cell)` answer the notebook's document for each of its cells."""
        self._cells = {c: n for c, n in self._cells.items() if n != notebook_uri}
        self._cells.update(dict.fromkeys(cell_uris, notebook_uri))

    def open(self, uri: str, text: str, version: int | None) -> Document:
        doc = Document(uri=uri, text=text, version=version, path=uri_to_path(uri))
        self._docs[uri] = doc
        return doc

    def get(self, uri: str) -> Document | None:
        """The document of `uri`; for a notebook cell, the notebook's (program lines)."""
        doc = self._docs.get(uri)
        if doc is None and uri in self._cells:
            return self._docs.get(self._cells[uri])
        return doc

    def close(self, uri: str) -> Document | None:
        """Forget the document; results recorded for it from now on are dropped."""
        self.set_cells(uri, [])
        doc = self._docs.pop(uri, None)
        if doc is not None:
            doc.close()
        return doc

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self._docs.values()))


def load_document(store: DocumentStore, uri: str) -> Document:
    """The open document, or a transient one read from disk (not kept, nothing cached); an
    `.onnx` model's stands for it by its digest (`source/onnx_files.py`).

    Raises OSError when the file cannot be read.
    """
    doc = store.get(uri)
    if doc is not None:
        return doc
    path = uri_to_path(uri)
    if path is None:
        raise OSError(f"not a file URI: {uri}")
    if is_onnx(path):
        # A model is no text: its digest stands for it in jobs (the worker reads the model,
        # its weights only mapped, never loaded); no modules, no lines but its nodes'.
        return Document(uri=uri, text=stand_in_text(path), version=None, path=path,
                        transient=True)
    if is_notebook(path):
        try:
            program = read_program(path)
        except (NotebookError, UnicodeDecodeError) as exc:
            raise OSError(str(exc)) from exc
        return Document(uri=uri, text=program.text, version=None, path=path,
                        notebook=program, transient=True)
    text = read_text(path)  # regular files only, bounded: never /dev/zero or a FIFO
    return Document(uri=uri, text=text, version=None, path=path, transient=True)

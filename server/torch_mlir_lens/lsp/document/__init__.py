"""Documents: each open document's state, owned by `Document` (freshness checked there alone),
the store of open documents, and how diagnostics follow edits."""

from torch_mlir_lens.lsp.document.document import STATIC, Document, Stamp
from torch_mlir_lens.lsp.document.line_moves import map_lines, shift_record
from torch_mlir_lens.lsp.document.records import DiagRecord, Verdict, verdict_of
from torch_mlir_lens.lsp.document.store import DocumentStore, load_document

__all__ = [
    "STATIC",
    "DiagRecord",
    "Document",
    "DocumentStore",
    "Stamp",
    "Verdict",
    "load_document",
    "map_lines",
    "shift_record",
    "verdict_of",
]

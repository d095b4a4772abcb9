"""Publishing: a document's records merged into LSP diagnostics (one per cause and line,
naming every backend it fails) and sent to the file, or to a notebook's cells.

The words are the findings' (`findings/merge.py`); this only turns them into LSP's shape: the
range the record holds, the library lines and knock-on ops as related information, and the
data the quick fixes read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from torch_mlir_lens.findings import merge
from torch_mlir_lens.lsp.checks import cell_positions, library_related
from torch_mlir_lens.lsp.checks.finding_records import in_document
from torch_mlir_lens.lsp.document import DiagRecord, Document
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.protocol.results import ErrorKind

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.state.session import SessionState

SOURCE = "torch-mlir"


def _key(rec: DiagRecord) -> tuple[Any, ...]:
    finding = rec.finding
    if finding.kind == ErrorKind.UNSUPPORTED_OP and finding.op:
        return (rec.range.start.line, *merge.group_key(finding))
    return (rec.range.start.line, rec.range.start.character, *merge.group_key(finding))


def merged(records: Iterable[DiagRecord], doc: Document) -> list[types.Diagnostic]:
    """LSP diagnostics from records: one per cause and line, naming every backend it fails."""
    groups: dict[tuple[Any, ...], list[DiagRecord]] = {}
    for rec in records:
        groups.setdefault(_key(rec), []).append(rec)
    out = [_diagnostic(recs, doc) for recs in groups.values()]
    out.sort(key=lambda d: (d.range.start.line, d.range.start.character, str(d.code)))
    return out


def _diagnostic(recs: list[DiagRecord], doc: Document) -> types.Diagnostic:
    one = merge.merged([r.finding for r in recs])
    first = one.first
    message = one.message
    if first.file and first.line and not in_document(first, doc):
        message = f"{message} (at {first.file}:{first.line})"
    data: dict[str, Any] = {"module": first.module or "", "kind": str(first.kind),
                            "targets": one.targets}
    if one.rewrites:
        data["rewrites"] = one.rewrites  # the quick fixes' (features/rewrite_fixes.py)
    return types.Diagnostic(
        range=recs[0].range,
        message=message,
        severity=convert.lsp_severity(first.severity),
        code=one.code,
        source=SOURCE,
        data=data,
        related_information=library_related.information(one.related)
        + library_related.notes(one.knock_on) or None,
    )


def publish(session: SessionState, doc: Document) -> None:
    """Send the document's merged diagnostics."""
    diagnostics = [] if session.settings.diagnostics == "off" else merged(
        doc.diagnostic_records(), doc)
    if doc.notebook is not None:
        doc.cells_published(cell_positions.publish(session, doc, diagnostics,
                                                   doc.published_cells))
        return
    session.client.publish_diagnostics(
        types.PublishDiagnosticsParams(uri=doc.uri, version=doc.version, diagnostics=diagnostics)
    )


def publish_model(session: SessionState, doc: Document, records: list[DiagRecord]) -> None:
    """Send an `.onnx` model's diagnostics: it is no open text document (its view is the
    client's), so they go to its URI from here, not from the document's records."""
    diagnostics = [] if session.settings.diagnostics == "off" else merged(records, doc)
    session.client.publish_diagnostics(
        types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=diagnostics))

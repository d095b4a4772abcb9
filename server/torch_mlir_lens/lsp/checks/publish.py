"""Publishing: a document's records merged into LSP diagnostics (one per op and line, naming
every backend it fails) and sent to the file, or to a notebook's cells."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from torch_mlir_lens.lsp.checks import cell_positions, library_related
from torch_mlir_lens.lsp.document import DiagRecord, Document
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.rules.targets import BACKENDS, target_title

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.state.session import SessionState

SOURCE = "torch-mlir"


def merge(records: Iterable[DiagRecord]) -> list[types.Diagnostic]:
    """LSP diagnostics from records: one per op and line, naming every backend it fails."""
    groups: dict[tuple[Any, ...], list[DiagRecord]] = {}
    for rec in records:
        if rec.kind == ErrorKind.UNSUPPORTED_OP and rec.op:
            key: tuple[Any, ...] = ("op", rec.range.start.line, rec.cause or rec.op)
        else:
            key = ("other", rec.range.start.line, rec.range.start.character, rec.kind,
                   rec.message)
        groups.setdefault(key, []).append(rec)
    out = []
    for key, recs in groups.items():
        first = recs[0]
        targets = sorted(
            {t for r in recs for t in r.targets},
            key=lambda t: BACKENDS.index(t) if t in BACKENDS else len(BACKENDS),
        )
        if key[0] == "op":
            names = ", ".join(target_title(t) for t in targets)
            message = f"{first.cause or first.op} cannot be lowered to " \
                      f"{names or 'a checked backend'}"
            detail = first.message.strip()
            if detail and detail != message and len(recs) == 1 and first.cause is None \
                    and "cannot be lowered" not in detail:
                message += f": {detail}"
            message += _reasons(recs)
            code = first.op
        else:
            message, code = first.message, first.kind
            if first.kind == ErrorKind.LOWERING_ERROR and targets:
                message = f"{message} ({', '.join(target_title(t) for t in targets)})"
        if first.related:
            message = f"{message} (at {', '.join(first.related)})"
        library = library_related.collect(recs)
        message = library_related.name_in_message(message, library)
        notes = list(dict.fromkeys(n for r in recs for n in r.notes))
        out.append(
            types.Diagnostic(
                range=first.range,
                message=message,
                severity=first.severity,
                code=code,
                source=SOURCE,
                data={"module": first.module, "kind": first.kind, "targets": targets,
                      **_offers(recs)},
                related_information=library_related.information(library) + [
                    types.DiagnosticRelatedInformation(
                        location=types.Location(
                            uri=convert.path_to_uri(file),
                            range=types.Range(start=types.Position(line=line - 1, character=0),
                                              end=types.Position(line=line - 1, character=0)),
                        ),
                        message=text,
                    )
                    for file, line, text in notes
                ] or None,
            )
        )
    out.sort(key=lambda d: (d.range.start.line, d.range.start.character, str(d.code)))
    return out


def _reasons(recs: list[DiagRecord]) -> str:
    """Why each backend refuses the op: " (reason)" when all say the same, else each named."""
    said = {t: r.reason for r in recs if r.reason for t in r.targets}
    if not said:
        return ""
    if len(set(said.values())) == 1:
        return f" ({next(iter(said.values()))})"
    return " (" + "; ".join(f"{target_title(t)}: {why}" for t, why in said.items()) + ")"


def _offers(recs: list[DiagRecord]) -> dict[str, Any]:
    """The quick fixes' data: the proven rewrites per backend (code_actions.py reads them)."""
    out = [{"target": t, "rewrites": list(r.offer[0]), "maxAbs": r.offer[1], "op": r.op}
           for r in recs if r.offer is not None for t in r.targets]
    return {"rewrites": out} if out else {}


def publish(session: SessionState, doc: Document) -> None:
    """Send the document's merged diagnostics."""
    diagnostics = [] if session.settings.diagnostics == "off" else merge(doc.diagnostic_records())
    if doc.notebook is not None:
        doc.cells_published(cell_positions.publish(session, doc, diagnostics,
                                                   doc.published_cells))
        return
    session.client.publish_diagnostics(
        types.PublishDiagnosticsParams(uri=doc.uri, version=doc.version, diagnostics=diagnostics)
    )

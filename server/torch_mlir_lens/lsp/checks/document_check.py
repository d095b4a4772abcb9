"""What a document's check does: publish its static findings, then (when lowering) check each
module that is worth an export and publish its findings as they come."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.checks import rewrite_offers, staging
from torch_mlir_lens.lsp.checks.finding_records import (
    error_records,
    result_records,
    static_records,
)
from torch_mlir_lens.lsp.checks.publish import publish
from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.protocol.frames import in_installed_package
from torch_mlir_lens.protocol.results import LensError, LowerResult

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session


def modules_to_check(session: Session, doc: Document) -> list[discovery.ModuleInfo]:
    """Modules whose check is worth an export: known inputs, not only derived from a parent.

    A module whose inputs are derived from a parent is lowered inside the parent's check
    already: its ops, and their problems, are located at its own lines there.
    """
    return [info for info in session.modules_of(doc)
            if info.inputs not in ("missing", "derived")]


async def check_document(session: Session, doc: Document, *, lowering: bool) -> None:
    """Publish the static findings, then (if `lowering`) check each module and publish."""
    if in_installed_package(doc.path):
        # Library code opened for reading (e.g. from an IR pane): nothing of ours to report.
        doc.clear_diagnostics()
        publish(session, doc)
        return
    doc.set_static_diagnostics(static_records(session, doc))
    if lowering:
        doc.drop_stale_verify_diagnostics()
    publish(session, doc)
    if not lowering or not session.trusted or not doc.path:
        return
    stamp = doc.stamp()
    for info in modules_to_check(session, doc):
        checked: list[LowerResult] = []
        try:
            results = await staging.check(session, doc, info.name)
            checked = list(results.values())
            records = result_records(doc, info, checked, session)
        except LensError as err:
            if err.kind in staging.NOT_A_VERDICT:
                return
            records = error_records(doc, info, err)
        if not doc.record_diagnostics(stamp, info.name, records):
            return  # the text moved on; its own check will publish
        publish(session, doc)
        rewrite_offers.proving(session, doc, info, checked, stamp)
    session.refresh_lenses()

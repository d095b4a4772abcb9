"""Diagnostics (source `torch-mlir`): unsupported ops per backend, export and worker failures,
modules without example inputs.

When: on open and on save by default; `diagnostics: "onType"` also checks ~500 ms after the
last edit; `"off"` publishes nothing. Between checks, published diagnostics follow their
lines as the text changes and vanish when their lines are edited (see documents.py).
One check of a module is one export in two engine calls (the default target, then the other
diagnosed backends from the worker's cached export), shared with hover and the lenses; a
module's diagnostics are published once all its backends are known.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from torch_mlir_lens import culprits, discovery
from torch_mlir_lens.frames import in_installed_package
from torch_mlir_lens.lsp import convert, library_related, notebook_view, verify_view
from torch_mlir_lens.lsp.documents import STATIC, DiagRecord, DocumentState, PendingCheck
from torch_mlir_lens.lsp.trust import UNTRUSTED
from torch_mlir_lens.results import ErrorKind, LensDiagnostic, LensError, LowerResult
from torch_mlir_lens.targets import BACKENDS, target_title

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.server import LensServer

log = logging.getLogger(__name__)

SOURCE = "torch-mlir"
DEBOUNCE_S = 0.5
INPUTS_MISSING = str(ErrorKind.INPUTS_MISSING)
# Failures of the worker itself: shown on the module's name, not on a line.
_WORKER_KINDS = {ErrorKind.WORKER_CRASH, ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT}
_QUIET_KINDS = {ErrorKind.CANCELLED, UNTRUSTED}


def register(server: LensServer) -> None:
    """Nothing to register: document sync and settings changes call into this module."""


# -- when -------------------------------------------------------------------------------


def on_open(server: LensServer, doc: DocumentState) -> None:
    if server.settings.diagnostics == "off":
        return
    schedule(server, doc, lowering=True)


def on_change(server: LensServer, doc: DocumentState) -> None:
    mode = server.settings.diagnostics
    if mode == "off":
        return
    if mode == "onType":
        schedule(server, doc, lowering=True, delay=DEBOUNCE_S)
    else:
        # Stale lowerings stop; static findings and moved diagnostics publish at once.
        schedule(server, doc, lowering=False)


def on_save(server: LensServer, doc: DocumentState) -> None:
    if server.settings.diagnostics == "off":
        return
    schedule(server, doc, lowering=True)


def on_close(server: LensServer, doc: DocumentState) -> None:
    pending = server.checks.pop(doc.uri, None)
    if pending is not None:
        pending.task.cancel()
    if doc.notebook is not None:  # its cells hold its diagnostics
        doc.notebook.spans.clear()
        doc.notebook.problems.clear()
        publish(server, doc)
        return
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=[])
    )


def recheck_all(server: LensServer, *, lowering: bool) -> None:
    """Re-publish every open document (settings or trust changed)."""
    for doc in server.store:
        if server.settings.diagnostics == "off":
            doc.diagnostics.clear()
            publish(server, doc)
        else:
            schedule(server, doc, lowering=lowering)


def schedule(
    server: LensServer, doc: DocumentState, *, lowering: bool, delay: float = 0.0
) -> None:
    """(Re)start the check of a document, cancelling the one under way (debounce)."""
    checks = server.checks
    previous = checks.pop(doc.uri, None)
    if previous is not None:
        # Still owed: the check that replaces it for the same text must not drop its lowering.
        lowering = lowering or previous.owes_lowering(doc.generation)
        previous.task.cancel()
    pending = PendingCheck(asyncio.ensure_future(_check_later(server, doc, lowering, delay)),
                           doc.generation, lowering)
    checks[doc.uri] = pending
    pending.task.add_done_callback(
        lambda _: checks.pop(doc.uri, None) if checks.get(doc.uri) is pending else None)


async def _check_later(
    server: LensServer, doc: DocumentState, lowering: bool, delay: float
) -> None:
    if delay:
        await asyncio.sleep(delay)
    try:
        await check_document(server, doc, lowering=lowering)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("checking %s failed", doc.uri)


# -- what -------------------------------------------------------------------------------


def modules_to_check(
    server: LensServer, doc: DocumentState
) -> list[discovery.ModuleInfo]:
    """Modules whose check is worth an export: known inputs, not only derived from a parent.

    A module whose inputs are derived from a parent is lowered inside the parent's check
    already: its ops, and their problems, are located at its own lines there.
    """
    out = []
    for info in _modules(server, doc):
        if info.inputs in ("missing", "derived"):
            continue
        out.append(info)
    return out


def _modules(server: LensServer, doc: DocumentState) -> list[discovery.ModuleInfo]:
    return doc.modules(dict(server.settings.example_inputs), server.workspace_root)


async def check_document(server: LensServer, doc: DocumentState, *, lowering: bool) -> None:
    """Publish the static findings, then (if `lowering`) check each module and publish."""
    if in_installed_package(doc.path):
        # Library code opened for reading (e.g. from an IR pane): nothing of ours to report.
        doc.diagnostics.clear()
        publish(server, doc)
        return
    doc.diagnostics[STATIC] = static_records(server, doc)
    if lowering:
        # Verify findings of an older text (its verdict is gone with the text) go at a check.
        for key in [k for k in doc.diagnostics if k.startswith(verify_view.diagnostics_key(""))]:
            if key[len(verify_view.diagnostics_key("")):] not in doc.verify:
                del doc.diagnostics[key]
    publish(server, doc)
    if not lowering or not server.trusted or not doc.path:
        return
    generation = doc.generation
    for info in modules_to_check(server, doc):
        try:
            results = await server.service.check(doc, info.name)
            records = result_records(doc, info, results.values(), server)
        except LensError as err:
            if err.kind in _QUIET_KINDS:
                return
            records = error_records(doc, info, err)
        if doc.generation != generation:
            return  # the text moved on; its own check will publish
        doc.diagnostics[info.name] = records
        publish(server, doc)
    server.refresh_lenses()


def static_records(server: LensServer, doc: DocumentState) -> list[DiagRecord]:
    """One Information diagnostic per module class without example inputs."""
    lines = doc.lines
    out = []
    for info in _modules(server, doc):
        if info.kind != "class" or info.inputs != "missing":
            continue
        out.append(
            DiagRecord(
                range=_name_range(lines, info),
                severity=types.DiagnosticSeverity.Information,
                message=(
                    f"{info.name}: no example inputs, so it cannot be lowered. Add a "
                    "`# torch-mlir-lens: inputs=(...)` comment above the class (quick fix), "
                    "or set `torchMlirLens.exampleInputs`."
                ),
                kind=INPUTS_MISSING,
                module=info.name,
            )
        )
    return out


def result_records(
    doc: DocumentState,
    info: discovery.ModuleInfo,
    results: Iterable[LowerResult],
    server: LensServer,
) -> list[DiagRecord]:
    """The records of one module's check: each diagnosed backend's problems."""
    diagnosed = set(server.settings.diagnostic_targets)
    out: list[DiagRecord] = []
    for result in results:
        for diag in result.diagnostics:
            target = diag.target or result.target
            if diag.kind == ErrorKind.UNSUPPORTED_OP and target not in diagnosed:
                continue
            out.append(_record(doc, info, diag, target))
    return out


def error_records(
    doc: DocumentState, info: discovery.ModuleInfo, err: LensError
) -> list[DiagRecord]:
    """The record of a check that failed as a whole (export, worker, inputs)."""
    diag = err.to_diagnostic()
    if err.kind == ErrorKind.INPUTS_MISSING:
        diag.severity = "information"
    return [_record(doc, info, diag, None)]


def _record(
    doc: DocumentState, info: discovery.ModuleInfo, diag: LensDiagnostic, target: str | None
) -> DiagRecord:
    lines = doc.lines
    here = diag.file is None or (doc.path is not None and _same_file(diag.file, doc.path))
    related: tuple[str, ...] = ()
    if diag.kind in _WORKER_KINDS or diag.line is None or not here:
        rng = _name_range(lines, info)
        if diag.file and diag.line and not here:
            related = (f"{diag.file}:{diag.line}",)
    else:
        rng = convert.line_range(lines, diag.line)
    severity = convert.lsp_severity(diag.severity)
    return DiagRecord(
        range=rng,
        severity=severity,
        message=diag.message,
        kind=str(diag.kind),
        module=info.name,
        op=convert.short_op(diag.op),
        targets=(target,) if target else (),
        related=related,
        library=tuple((r.file, r.line, r.message) for r in diag.related),
        cause=diag.cause,
        notes=_knock_on_notes(diag),
    )


def _knock_on_notes(diag: LensDiagnostic) -> tuple[tuple[str, int, str], ...]:
    """Related information: each knock-on op folded into this diagnostic, at its line."""
    cause = culprits.cause_of(diag)
    return tuple(
        (k["file"], int(k["line"]), f"`{culprits.short_op(k.get('op'))}` fails only because "
                                    f"of {cause}")
        for k in diag.knock_on or [] if k.get("file") and k.get("line")
    )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normpath(a) == os.path.normpath(b)


def _name_range(lines: list[str], info: discovery.ModuleInfo) -> types.Range:
    return convert.name_range(lines, info.line, info.name_col, info.name_end_col, info.name)


# -- publishing -------------------------------------------------------------------------


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
                data={"module": first.module, "kind": first.kind, "targets": targets},
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


def publish(server: LensServer, doc: DocumentState) -> None:
    """Send the document's merged diagnostics."""
    diagnostics = [] if server.settings.diagnostics == "off" else merge(doc.all_diagnostics())
    if doc.notebook is not None:
        doc.published_cells = notebook_view.publish(server, doc, diagnostics,
                                                    doc.published_cells)
        return
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=doc.uri, version=doc.version, diagnostics=diagnostics)
    )

"""A module's findings as diagnostic records: unsupported ops per backend, failed checks,
modules without example inputs (static)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.defaults import MAX_ANALYSED_BYTES
from torch_mlir_lens.lsp.document import DiagRecord, Document
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LensError, LowerResult
from torch_mlir_lens.protocol.rewrite_results import RewriteReport
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.system.reading import size_text

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.state.session import SessionState

INPUTS_MISSING = str(ErrorKind.INPUTS_MISSING)
BAD_INPUTS = str(ErrorKind.BAD_INPUTS)
TOO_LARGE = "too-large"
# Failures of the worker itself: shown on the module's name, not on a line.
_WORKER_KINDS = {ErrorKind.WORKER_CRASH, ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT}


def too_large_message(length: int) -> str:
    """Why a document is not analysed."""
    return (f"Torch-MLIR Lens does not analyse this file: it holds {size_text(length)} of "
            f"text, more than the {size_text(MAX_ANALYSED_BYTES)} it parses in the editor "
            "(the command line reads it: `torch-mlir-lens check FILE`).")


def static_records(session: SessionState, doc: Document) -> list[DiagRecord]:
    """What the text alone tells: an error at each part of a `# torch-mlir-lens:` comment
    that cannot be read, one Information diagnostic per module class without example inputs."""
    if doc.too_large:
        return [DiagRecord(range=convert.line_range([], 1),
                           severity=types.DiagnosticSeverity.Warning,
                           message=too_large_message(len(doc.text)), kind=TOO_LARGE,
                           module="")]
    lines = doc.lines
    out = []
    for info in session.modules_of(doc):
        for error in info.annotation.errors if info.annotation is not None else []:
            # The worker refuses these too, with the same message: the two merge into one.
            out.append(DiagRecord(range=convert.line_range(lines, error.line),
                                  severity=types.DiagnosticSeverity.Error,
                                  message=error.message, kind=BAD_INPUTS, module=info.name))
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
    doc: Document,
    info: discovery.ModuleInfo,
    results: Iterable[LowerResult],
    session: SessionState,
    offers: RewriteReport | None = None,
) -> list[DiagRecord]:
    """The records of one module's check: each diagnosed backend's problems (with the proven
    rewrites of `offers`, once the worker has proven them)."""
    diagnosed = set(session.settings_for(doc.path).diagnostic_targets)
    out: list[DiagRecord] = []
    for result in results:
        for diag in result.diagnostics:
            target = diag.target or result.target
            if diag.kind == ErrorKind.UNSUPPORTED_OP and target not in diagnosed:
                continue
            out.append(_record(doc, info, diag, target, _offer(offers, diag, target)))
    return out


EXPORT_OP = "torch.export"  # an export refusal's offer (the worker's `rewrites` job)


def _offer(offers: RewriteReport | None, diag: LensDiagnostic,
           target: str) -> tuple[tuple[str, ...], float | None] | None:
    """The proven rewrites of one culprit: (names, max error on the example inputs)."""
    if offers is None:
        return None
    if diag.kind == ErrorKind.EXPORT_ERROR:  # a pin past the refusal: the same on every target
        for offer in offers.for_target(target):
            if offer.offered and offer.line == diag.line and offer.op == EXPORT_OP:
                return tuple(offer.rewrites), offer.max_abs
        return None
    if diag.kind != ErrorKind.UNSUPPORTED_OP:
        return None
    op = culprits.short_op(diag.op)
    for offer in offers.for_target(target):
        if offer.offered and offer.line == diag.line and (op == offer.op or op in offer.ops):
            return tuple(offer.rewrites), offer.max_abs
    return None


def error_records(
    doc: Document, info: discovery.ModuleInfo, err: LensError
) -> list[DiagRecord]:
    """The record of a check that failed as a whole (export, worker, inputs)."""
    diag = err.to_diagnostic()
    if err.kind == ErrorKind.INPUTS_MISSING:
        diag.severity = "information"
    return [_record(doc, info, diag, None)]


def _record(
    doc: Document, info: discovery.ModuleInfo, diag: LensDiagnostic, target: str | None,
    offer: tuple[tuple[str, ...], float | None] | None = None,
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
        reason=diag.reason,
        offer=offer,
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



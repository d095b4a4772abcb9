"""Notebook cells as seen by the features: program lines ↔ (cell URI, cell line).

A notebook's `Document` holds the program of its cells (`source/notebook_program.py`); every feature
works on program lines as for a file. The editor, though, asks and shows per cell: this module
turns a cell's positions into program lines and the features' answers (lenses, hover ranges,
quick-fix edits, diagnostics, the IR pane's source map) back into cell positions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.source.notebook_program import CellSpan, Program, module_text, relabel

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.state.session import SessionState

SOURCE = "torch-mlir"
CELL_SKIPPED = "cell-skipped"  # diagnostic code of a cell left out because it does not parse


def resolve(session: SessionState, uri: str) -> tuple[Document | None, CellSpan | None]:
    """The document a request's URI is about, and the cell when the URI is a notebook cell."""
    doc = session.store.get(uri)
    if doc is None or doc.notebook is None or doc.uri == uri:
        return doc, None
    span = doc.notebook.span_of(uri)
    return (doc, span) if span is not None else (None, None)


def job_text(session: SessionState, doc: Document, module: str) -> str:
    """The text to lower `module` from: a file's text; for a notebook, its cells up to the
    module's (`Program.text_for`: a later training cell never runs)."""
    program = doc.notebook
    if program is None:
        return doc.text
    modules = session.modules_of(doc)
    return module_text(program, modules, module)


def program_line(span: CellSpan, cell_line0: int) -> int:
    """0-based line in a cell → 0-based program line."""
    return span.start + cell_line0


def to_cell_range(program: Program, rng: types.Range) -> tuple[str, types.Range] | None:
    """A program range → (cell URI, the range in that cell); None outside every open cell."""
    where = program.to_cell(rng.start.line + 1)
    if where is None or where[0].uri is None:
        return None
    span = where[0]
    end = min(rng.end.line, span.start + max(span.count, 1) - 1)
    return span.uri or "", types.Range(
        start=types.Position(line=rng.start.line - span.start, character=rng.start.character),
        end=types.Position(line=end - span.start, character=rng.end.character),
    )


def in_cell(span: CellSpan, rng: types.Range) -> types.Range | None:
    """A program range as a range of `span`'s cell, when it starts there."""
    if not span.start <= rng.start.line < span.start + span.count:
        return None
    end = min(rng.end.line, span.start + span.count - 1)
    return types.Range(
        start=types.Position(line=rng.start.line - span.start, character=rng.start.character),
        end=types.Position(line=end - span.start, character=rng.end.character),
    )


def to_program_range(span: CellSpan, rng: types.Range) -> types.Range:
    return types.Range(
        start=types.Position(line=program_line(span, rng.start.line),
                             character=rng.start.character),
        end=types.Position(line=program_line(span, rng.end.line), character=rng.end.character),
    )


def hover_in_cell(span: CellSpan, hover: types.Hover, line: int) -> None:
    """A hover of program `line` as the cell's (its range, and "line N" in its header)."""
    if hover.range is not None:
        hover.range = in_cell(span, hover.range)
    if isinstance(hover.contents, types.MarkupContent):
        hover.contents.value = hover.contents.value.replace(
            f" · line {line}", f" · cell {span.number} line {line - span.start}", 1)


def lenses_in_cell(span: CellSpan, lenses: Sequence[types.CodeLens]) -> list[types.CodeLens]:
    """The program's lenses that sit in `span`'s cell, moved to its lines."""
    out = []
    for lens in lenses:
        rng = in_cell(span, lens.range)
        if rng is not None:
            out.append(types.CodeLens(range=rng, command=lens.command, data=lens.data))
    return out


def diagnostic_in_program(span: CellSpan, diag: types.Diagnostic) -> types.Diagnostic:
    """A cell's diagnostic (from a code-action request) in program lines."""
    return types.Diagnostic(
        range=to_program_range(span, diag.range), message=diag.message, severity=diag.severity,
        code=diag.code, source=diag.source, data=diag.data,
    )


def actions_to_cells(
    doc: Document, actions: Sequence[types.CodeAction], span: CellSpan
) -> list[types.CodeAction]:
    """Code actions whose edits (on the program) become edits of the cells they touch."""
    program = doc.notebook
    out = []
    for action in actions:
        edit = action.edit
        if program is None or edit is None or not edit.changes:
            out.append(action)
            continue
        changes: dict[str, list[types.TextEdit]] = {}
        for uri, edits in edit.changes.items():
            for e in edits:
                if uri != doc.uri:
                    changes.setdefault(uri, []).append(e)
                    continue
                moved = to_cell_range(program, e.range) or (span.uri or "", e.range)
                changes.setdefault(moved[0], []).append(
                    types.TextEdit(range=moved[1], new_text=e.new_text))
        diags = [types.Diagnostic(range=in_cell(span, d.range) or d.range, message=d.message,
                                  severity=d.severity, code=d.code, source=d.source,
                                  data=d.data) for d in action.diagnostics or []]
        out.append(types.CodeAction(
            title=action.title, kind=action.kind, diagnostics=diags or None,
            is_preferred=action.is_preferred, edit=types.WorkspaceEdit(changes=changes),
            command=action.command, data=action.data,
        ))
    return out


def publish(session: SessionState, doc: Document, diagnostics: list[types.Diagnostic],
            previous: frozenset[str]) -> set[str]:
    """Publish a notebook's diagnostics on its cells; the cells published to.

    `previous`: the cells published to last time (those now without findings, or removed,
    get an empty list). A cell left out because it does not parse gets one error.
    """
    program = doc.notebook
    by_cell: dict[str, list[types.Diagnostic]] = {}
    if program is not None:
        for span in program.spans:
            if span.uri:
                by_cell[span.uri] = []
        for diag in diagnostics:
            moved = to_cell_range(program, diag.range)
            if moved is None:
                continue
            diag.range = moved[1]
            if doc.path:
                diag.message = relabel(diag.message, doc.path, program)
            by_cell.setdefault(moved[0], []).append(diag)
        for problem in program.problems:
            if problem.uri and session.settings.diagnostics != "off":
                by_cell.setdefault(problem.uri, []).append(_problem_diagnostic(problem.line,
                                                                               problem.message))
    for uri in previous - set(by_cell):
        by_cell[uri] = []
    for uri, diags in by_cell.items():
        session.client.publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))
    return {uri for uri, diags in by_cell.items() if diags}


def _problem_diagnostic(line: int, message: str) -> types.Diagnostic:
    at = types.Position(line=max(line - 1, 0), character=0)
    return types.Diagnostic(
        range=types.Range(start=at, end=types.Position(line=at.line, character=1000)),
        message=f"{message}: this cell does not parse, so Torch-MLIR Lens leaves it out",
        severity=types.DiagnosticSeverity.Error, code=CELL_SKIPPED, source=SOURCE,
    )


def relocate_lower(doc: Document,
                   answer: lens_types.LowerResponse) -> lens_types.LowerResponse:
    """A `torchMlirLens/lower` answer with the notebook's lines as (cell URI, cell line)."""
    program = doc.notebook
    if program is None or not doc.path:
        return answer
    want = os.path.normcase(os.path.normpath(doc.path))
    cached: dict[str, bool] = {}

    def mine(uri: str | None) -> bool:
        if uri is None:
            return False
        if uri not in cached:
            path = convert.uri_to_path(uri)
            cached[uri] = path is not None and os.path.normcase(os.path.normpath(path)) == want
        return cached[uri]

    def move(entry: _CellEntry) -> None:
        if not mine(entry.uri) or entry.line is None:
            return
        where = program.to_cell(entry.line)
        if where is None:
            return
        entry.cell = where[0].number
        if where[0].uri:
            entry.uri, entry.line = where[0].uri, where[1]

    for mapping in answer.map:
        move(mapping)
    for diag in answer.diagnostics:
        move(diag)
    if answer.error is not None:
        move(answer.error)
    return answer


# The answer entries located in a notebook's program, which `relocate_lower` moves to cells.
_CellEntry = lens_types.IrLineMapping | lens_types.LensDiagnostic | lens_types.LowerError

"""A module's findings placed in its document: the editor's rendering of `findings/`.

What a finding says is decided in `findings/` (`make.py`, `wording.py`); here each is given its
place in the document (`DiagRecord`: the finding and its range): a line of this document, else
the module's name (a worker failure, no line known, a line of another file), and the static
findings of the text itself (unreadable `# torch-mlir-lens:` comments, modules without
example inputs, a document too large to analyse).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.defaults import MAX_ANALYSED_BYTES
from torch_mlir_lens.findings import Finding, make, proven
from torch_mlir_lens.lsp.document import DiagRecord, Document
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.protocol.rewrite_results import RewriteReport
from torch_mlir_lens.system.reading import size_text

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.state.session import SessionState

INPUTS_MISSING = str(ErrorKind.INPUTS_MISSING)
BAD_INPUTS = str(ErrorKind.BAD_INPUTS)
TOO_LARGE = "too-large"


def too_large_message(length: int) -> str:
    """Why a document is not analysed."""
    return (f"Torch-MLIR Lens does not analyse this file: it holds {size_text(length)} of "
            f"text, more than the {size_text(MAX_ANALYSED_BYTES)} it parses in the editor "
            "(the command line reads it: `torch-mlir-lens check FILE`).")


def static_records(session: SessionState, doc: Document) -> list[DiagRecord]:
    """What the text alone tells: an error at each part of a `# torch-mlir-lens:` comment
    that cannot be read, one Information diagnostic per module class without example inputs."""
    path = doc.path or doc.uri
    if doc.too_large:
        finding = make.file_problem(TOO_LARGE, too_large_message(len(doc.text)), file=path,
                                    line=1, severity="warning")
        return [DiagRecord(finding, convert.line_range([], 1))]
    out = []
    for info in session.modules_of(doc):
        for error in info.annotation.errors if info.annotation is not None else []:
            out.append(place(doc, info, make.annotation_error(
                error.message, error.line, module=info.name, module_file=path,
                module_line=info.line)))
        if info.kind != "class" or info.inputs != "missing":
            continue
        out.append(place(doc, info, make.missing_inputs(
            f"{info.name}: no example inputs, so it cannot be lowered. Add a "
            "`# torch-mlir-lens: inputs=(...)` comment above the class (quick fix), "
            "or set `torchMlirLens.exampleInputs`.",
            module=info.name, module_file=path, module_line=info.line)))
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
    found = [f for f in make.of_results(results, module=info.name,
                                        module_file=doc.path or doc.uri,
                                        module_line=info.line)
             if not (f.kind == ErrorKind.UNSUPPORTED_OP and f.target not in diagnosed)]
    if offers is not None:
        proven.with_proofs(found, offers)
    return [place(doc, info, f) for f in found]


def error_records(doc: Document, info: discovery.ModuleInfo, err: LensError
                  ) -> list[DiagRecord]:
    """The record of a check that failed as a whole (export, worker, inputs)."""
    return [place(doc, info, make.of_error(err, module=info.name,
                                           module_file=doc.path or doc.uri,
                                           module_line=info.line))]


def model_records(doc: Document, module: str, results: Iterable[LowerResult],
                  diagnosed: Iterable[str]) -> list[DiagRecord]:
    """The records of an `.onnx` model's lowering: each of the `diagnosed` backends' problems
    at its node (the node's 1-based position is its line: Problems lists node N at line N),
    a problem of the whole model at line 1."""
    wanted = set(diagnosed)
    path = doc.path or doc.uri
    found = [f for f in make.of_results(results, module=module, module_file=path,
                                        module_line=None)
             if f.target is None or f.target in wanted]
    return [DiagRecord(f, node_range(f.line)) for f in found]


def model_error_records(doc: Document, module: str, err: LensError) -> list[DiagRecord]:
    """The record of a model that could not be read or imported at all."""
    finding = make.of_error(err, module=module, module_file=doc.path or doc.uri,
                            module_line=None)
    return [DiagRecord(finding, node_range(finding.line))]


def node_range(line: int | None) -> types.Range:
    """Where a finding about ONNX node `line` (1-based; None: the model) shows."""
    at = types.Position(line=max((line or 1) - 1, 0), character=0)
    return types.Range(start=at, end=at)


def place(doc: Document, info: discovery.ModuleInfo, finding: Finding) -> DiagRecord:
    """A finding at its line of this document, else on the module's name."""
    lines = doc.lines
    if finding.on_module or finding.line is None or not in_document(finding, doc):
        return DiagRecord(finding, name_range(lines, info))
    return DiagRecord(finding, convert.line_range(lines, finding.line))


def in_document(finding: Finding, doc: Document) -> bool:
    """Whether a finding's line is a line of this document (not of another file)."""
    if finding.file in (doc.path, doc.uri):
        return True
    return doc.path is not None and _same_file(finding.file, doc.path)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.normpath(a) == os.path.normpath(b)


def name_range(lines: list[str], info: discovery.ModuleInfo) -> types.Range:
    """The range of the module's name (where a finding about the whole module shows)."""
    return convert.name_range(lines, info.line, info.name_col, info.name_end_col, info.name)

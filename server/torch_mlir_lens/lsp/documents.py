"""Per-document state: text version, modules found statically, results and diagnostics.

Results belong to one version of a document's text: any change drops them (the engine's
content-hash cache still answers if the text comes back). Published diagnostics are kept
across changes but moved with their lines, and dropped when their lines are edited, until
the next check replaces them.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from lsprotocol import types

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.convert import uri_to_path
from torch_mlir_lens.results import LensError, LowerResult

STATIC = ""  # diagnostics bucket of findings that need no lowering


@dataclass(frozen=True)
class DiagRecord:
    """One diagnostic before merging: what one module's check found at one range."""

    range: types.Range
    severity: types.DiagnosticSeverity
    message: str
    kind: str
    module: str
    op: str | None = None
    targets: tuple[str, ...] = ()
    related: tuple[str, ...] = ()  # "file:line" notes for findings outside this file


@dataclass
class Verdict:
    """How one module fared at one backend in the last check."""

    ok: bool
    unsupported: tuple[str, ...] = ()  # op names, one per unsupported op occurrence
    error: str | None = None  # export / worker failure that stopped the check


@dataclass
class DocumentState:
    """What the server knows about one open document."""

    uri: str
    text: str
    version: int | None
    path: str | None = None
    _modules: list[discovery.ModuleInfo] | None = None
    results: dict[tuple[str, str], LowerResult] = field(default_factory=dict)
    errors: dict[str, LensError] = field(default_factory=dict)
    verdicts: dict[str, dict[str, Verdict]] = field(default_factory=dict)
    diagnostics: dict[str, list[DiagRecord]] = field(default_factory=dict)
    generation: int = 0  # bumps on every text change (versions may be None)

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def modules(self, settings_inputs: dict[str, str], workspace: str | None) -> list[
        discovery.ModuleInfo
    ]:
        """The modules of this text (static discovery, cached per text)."""
        if self._modules is None:
            self._modules = discovery.find_modules(
                self.text, self.path, settings_inputs=settings_inputs, workspace=workspace
            )
        return self._modules

    def forget_modules(self) -> None:
        """Re-run discovery next time (e.g. the example-input settings changed)."""
        self._modules = None

    def forget_results(self) -> None:
        """Drop every lowering result (the text or a result-changing setting changed)."""
        self.results.clear()
        self.errors.clear()
        self.verdicts.clear()

    def update(self, text: str, version: int | None) -> None:
        """Take a new text: results go, diagnostics follow their lines or go."""
        line_map = map_lines(self.text.splitlines(), text.splitlines())
        self.diagnostics = {
            key: [moved for r in records if (moved := shift_record(r, line_map)) is not None]
            for key, records in self.diagnostics.items()
            if key != STATIC
        }
        self.text = text
        self.version = version
        self.generation += 1
        self._modules = None
        self.forget_results()

    def all_diagnostics(self) -> list[DiagRecord]:
        return [r for records in self.diagnostics.values() for r in records]


def map_lines(old: Sequence[str], new: Sequence[str]) -> dict[int, int]:
    """Old 0-based line → new 0-based line, for every line the edit left untouched."""
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    out: dict[int, int] = {}
    for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                out[i1 + k] = j1 + k
    return out


def shift_record(record: DiagRecord, line_map: dict[int, int]) -> DiagRecord | None:
    """The record moved with its lines, or None when one of its lines was edited."""
    start, end = record.range.start.line, record.range.end.line
    new_lines = [line_map.get(line) for line in range(start, end + 1)]
    if any(n is None for n in new_lines):
        return None
    new_start = line_map[start]
    if line_map[end] - new_start != end - start:
        return None
    moved = types.Range(
        start=types.Position(line=new_start, character=record.range.start.character),
        end=types.Position(line=line_map[end], character=record.range.end.character),
    )
    return replace(record, range=moved)


class DocumentStore:
    """The open documents by URI."""

    def __init__(self) -> None:
        self._docs: dict[str, DocumentState] = {}

    def open(self, uri: str, text: str, version: int | None) -> DocumentState:
        doc = DocumentState(uri=uri, text=text, version=version, path=uri_to_path(uri))
        self._docs[uri] = doc
        return doc

    def get(self, uri: str) -> DocumentState | None:
        return self._docs.get(uri)

    def close(self, uri: str) -> DocumentState | None:
        return self._docs.pop(uri, None)

    def __iter__(self) -> Iterator[DocumentState]:
        return iter(list(self._docs.values()))

    def by_path(self, path: str) -> DocumentState | None:
        for doc in self._docs.values():
            if doc.path == path:
                return doc
        return None


def load_document(store: DocumentStore, uri: str) -> DocumentState:
    """The open document, or a transient one read from disk (not kept, nothing cached).

    Raises OSError when the file cannot be read.
    """
    doc = store.get(uri)
    if doc is not None:
        return doc
    path = uri_to_path(uri)
    if path is None:
        raise OSError(f"not a file URI: {uri}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return DocumentState(uri=uri, text=text, version=None, path=path)

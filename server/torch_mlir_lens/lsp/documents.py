"""Per-document state: text version, modules found statically, results and diagnostics.

Results belong to one version of a module's fingerprint (`fingerprint.py`): a change drops the
results of the modules it can affect and keeps the others' (decided when results are next
read, so typing costs nothing here; the engine's cache still answers if the text comes back).
Published diagnostics are kept across changes but moved with their lines, and dropped when
their lines are edited, until the next check replaces them.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lsprotocol import types

from torch_mlir_lens import discovery, fingerprint
from torch_mlir_lens.lsp.convert import uri_to_path
from torch_mlir_lens.notebook import NotebookError, Program, is_notebook, read_program
from torch_mlir_lens.results import LensError, LowerResult
from torch_mlir_lens.verify_results import VerifyResult

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
    # (file, line, message) of the library lines behind a finding inside library code
    library: tuple[tuple[str, int, str], ...] = ()
    cause: str | None = None  # an unsupported op's cause, as worded by the worker
    # knock-on ops folded into this one: (file, 1-based line, message)
    notes: tuple[tuple[str, int, str], ...] = ()


@dataclass
class Verdict:
    """How one module fared at one backend in the last check."""

    ok: bool
    unsupported: tuple[str, ...] = ()  # op names, one per unsupported op occurrence
    error: str | None = None  # export / worker failure that stopped the check


@dataclass
class PendingCheck:
    """The diagnostics check under way for a document (one at a time; a newer one replaces it).

    A lowering check of a text stays owed until it finishes: a check that replaces it for the
    same text (e.g. settings pulled just after the file opened) lowers too.
    """

    task: asyncio.Task[None]
    generation: int  # the text it checks
    lowering: bool  # whether it lowers the modules, or only publishes static findings

    def owes_lowering(self, generation: int) -> bool:
        """Whether a check replacing this one for text `generation` must lower."""
        return self.lowering and self.generation == generation and not self.task.done()


@dataclass
class DocumentState:
    """What the server knows about one open document."""

    uri: str
    text: str
    version: int | None
    path: str | None = None
    _modules: list[discovery.ModuleInfo] | None = None
    _results: dict[tuple[str, str], LowerResult] = field(default_factory=dict)
    errors: dict[str, LensError] = field(default_factory=dict)
    _verdicts: dict[str, dict[str, Verdict]] = field(default_factory=dict)
    diagnostics: dict[str, list[DiagRecord]] = field(default_factory=dict)
    _verify: dict[str, VerifyResult] = field(default_factory=dict)  # module → its last verdict
    generation: int = 0  # bumps on every text change (versions may be None)
    # The discovery settings last used: fingerprints depend on them (inputs status).
    _settings: tuple[dict[str, str], str | None] = ({}, None)
    # Set by edits: the text the results were made for, and the modules that had errors
    # then. Which results survive is decided when they are next read (`_settle`), so a burst
    # of keystrokes costs one fingerprint comparison, not one per keystroke.
    _results_text: str | None = None
    _errored: set[str] = field(default_factory=set)
    # A notebook: `text` is its program (notebook.py), this maps its lines to cells.
    notebook: Program | None = None
    published_cells: set[str] = field(default_factory=set)  # cells holding its diagnostics

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @property
    def results(self) -> dict[tuple[str, str], LowerResult]:
        """(module, target) → the result for the current text."""
        self._settle()
        return self._results

    @property
    def verdicts(self) -> dict[str, dict[str, Verdict]]:
        """module → target → how it fared in the last check of the current text."""
        self._settle()
        return self._verdicts

    @property
    def verify(self) -> dict[str, VerifyResult]:
        """module → the last verify result for the current text."""
        self._settle()
        return self._verify

    def modules(self, settings_inputs: dict[str, str], workspace: str | None) -> list[
        discovery.ModuleInfo
    ]:
        """The modules of this text (static discovery, cached per text)."""
        if self._modules is None:
            self._settings = (dict(settings_inputs), workspace)
            self._modules = discovery.find_modules(
                self.text, self.path, settings_inputs=settings_inputs, workspace=workspace
            )
        return self._modules

    def forget_modules(self) -> None:
        """Re-run discovery next time (e.g. the example-input settings changed)."""
        self._modules = None

    def forget_results(self) -> None:
        """Drop every lowering result (the text or a result-changing setting changed)."""
        self._results_text = None
        self._errored = set()
        self._results.clear()
        self.errors.clear()
        self._verdicts.clear()
        self._verify.clear()

    def update(
        self, text: str, version: int | None, changes: Sequence[Any] | None = None
    ) -> None:
        """Take a new text: results of changed modules go, diagnostics follow their lines or go.

        `changes` are the client's content changes (LSP ranges), when it sent some.
        """
        kept = {k: v for k, v in self.diagnostics.items() if k != STATIC and v}
        if kept:
            line_map = map_lines(self.text.splitlines(), text.splitlines(), changes)
            kept = {
                key: [m for r in records if (m := shift_record(r, line_map)) is not None]
                for key, records in kept.items()
            }
        self.diagnostics = kept
        if self._results_text is None and (self._results or self._verdicts or self._verify):
            self._results_text = self.text
        # Errors always go (they may come from code outside a module's fingerprint, e.g. a
        # syntax error elsewhere), and so do the results of the modules that had them.
        self._errored |= set(self.errors)
        self.errors.clear()
        self.text = text
        self.version = version
        self.generation += 1
        self._modules = None

    def _settle(self) -> None:
        """Keep the results of the modules whose fingerprint the edits since did not change."""
        old_text, self._results_text = self._results_text, None
        errored, self._errored = self._errored, set()
        if old_text is None:
            return
        names = {m for m, _ in self._results} | set(self._verdicts) | set(self._verify)
        settings, workspace = self._settings

        def same(name: str) -> bool:
            return fingerprint.fingerprint(
                old_text, name, self.path, settings_inputs=settings, workspace=workspace,
            ) == fingerprint.fingerprint(
                self.text, name, self.path, settings_inputs=settings, workspace=workspace)

        kept = {name for name in names if name not in errored and same(name)}
        self._results = {k: v for k, v in self._results.items() if k[0] in kept}
        self._verdicts = {k: v for k, v in self._verdicts.items() if k in kept}
        self._verify = {k: v for k, v in self._verify.items() if k in kept}

    def all_diagnostics(self) -> list[DiagRecord]:
        return [r for records in self.diagnostics.values() for r in records]


_DIFF_LIMIT = 5000  # lines: beyond this the changed middle of a text is not diffed


def map_lines(
    old: Sequence[str], new: Sequence[str], changes: Sequence[Any] | None = None
) -> Callable[[int], int | None]:
    """Old 0-based line → its new line, or None when the edit touched it.

    From the edit ranges when the client sent incremental changes (cheap and exact), else
    from the common head and tail of the two texts plus a diff of the (small) middle. Either
    way a line only maps when its text is unchanged at the new position.
    """
    move: Callable[[int], int | None]
    ranged = bool(changes) and all(getattr(c, "range", None) is not None for c in changes or [])
    if ranged:
        def move(line: int) -> int | None:
            for change in changes or []:
                start, end = change.range.start.line, change.range.end.line
                delta = change.text.count("\n") - (end - start)
                if line > end or (line == end and line > start):
                    line += delta
                elif line == start and change.range.start.character == 0 and (
                    change.text.endswith("\n") or not change.text
                ) and end == start and change.range.end.character == 0:
                    line += delta  # whole lines inserted above this one
            return line
    else:
        move = _diff_mover(old, new)

    def mapped(line: int) -> int | None:
        target = move(line)
        if target is None or not 0 <= line < len(old) or not 0 <= target < len(new):
            return None
        return target if old[line] == new[target] else None

    return mapped


def _diff_mover(old: Sequence[str], new: Sequence[str]) -> Callable[[int], int | None]:
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    old_mid = list(old[head:len(old) - tail])
    new_mid = list(new[head:len(new) - tail])
    middle: dict[int, int] = {}
    if len(old_mid) <= _DIFF_LIMIT and len(new_mid) <= _DIFF_LIMIT:
        matcher = difflib.SequenceMatcher(None, old_mid, new_mid, autojunk=False)
        for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    middle[head + i1 + k] = head + j1 + k

    def move(line: int) -> int | None:
        if line < head:
            return line
        if line >= len(old) - tail:
            return line + len(new) - len(old)
        return middle.get(line)

    return move


def shift_record(
    record: DiagRecord, line_map: Callable[[int], int | None]
) -> DiagRecord | None:
    """The record moved with its lines, or None when one of its lines was edited."""
    start, end = record.range.start.line, record.range.end.line
    new_start = line_map(start)
    new_end = new_start if end == start else line_map(end)
    if new_start is None or new_end is None or new_end - new_start != end - start:
        return None
    moved = types.Range(
        start=types.Position(line=new_start, character=record.range.start.character),
        end=types.Position(line=new_end, character=record.range.end.character),
    )
    return replace(record, range=moved)


class DocumentStore:
    """The open documents by URI."""

    def __init__(self) -> None:
        self._docs: dict[str, DocumentState] = {}
        self._cells: dict[str, str] = {}  # notebook cell URI → the notebook's URI

    def set_cells(self, notebook_uri: str, cell_uris: Sequence[str]) -> None:
        """Make `get(cell)` answer the notebook's document for each of its cells."""
        self._cells = {c: n for c, n in self._cells.items() if n != notebook_uri}
        self._cells.update(dict.fromkeys(cell_uris, notebook_uri))

    def open(self, uri: str, text: str, version: int | None) -> DocumentState:
        doc = DocumentState(uri=uri, text=text, version=version, path=uri_to_path(uri))
        self._docs[uri] = doc
        return doc

    def get(self, uri: str) -> DocumentState | None:
        """The document of `uri`; for a notebook cell, the notebook's (program lines)."""
        doc = self._docs.get(uri)
        if doc is None and uri in self._cells:
            return self._docs.get(self._cells[uri])
        return doc

    def close(self, uri: str) -> DocumentState | None:
        self.set_cells(uri, [])
        return self._docs.pop(uri, None)

    def __iter__(self) -> Iterator[DocumentState]:
        return iter(list(self._docs.values()))


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
    if is_notebook(path):
        try:
            program = read_program(path)
        except (NotebookError, UnicodeDecodeError) as exc:
            raise OSError(str(exc)) from exc
        return DocumentState(uri=uri, text=program.text, version=None, path=path,
                             notebook=program)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return DocumentState(uri=uri, text=text, version=None, path=path)

"""One open document and everything the server knows about it, behind one owner.

Features read through its methods and record what they learn through its methods; a record
carries the `stamp` its work started from, and `Document` alone decides whether it is still
true (same text, document still open): the one freshness check of the server.

Results belong to one version of a module's fingerprint (`discovery/fingerprint.py`): a
change drops the results of the modules it can affect and keeps the others' (decided when
results are next read, so typing costs nothing here; the engine's cache still answers if the
text comes back).
Published diagnostics are kept across changes but moved with their lines (`line_moves.py`),
and dropped when their lines are edited, until the next check replaces them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NewType

from torch_mlir_lens import discovery
from torch_mlir_lens.defaults import MAX_ANALYSED_BYTES
from torch_mlir_lens.discovery import fingerprint
from torch_mlir_lens.lsp.document.line_moves import map_lines, shift_record
from torch_mlir_lens.lsp.document.records import DiagRecord, Verdict, verdict_of
from torch_mlir_lens.protocol.results import LensError, LowerResult
from torch_mlir_lens.protocol.verify_results import VerifyResult
from torch_mlir_lens.source.notebook_program import Program

STATIC = ""  # diagnostics bucket of findings that need no lowering
_VERIFY = "verify:"  # diagnostics bucket prefix of a module's Verify findings

# The text a piece of work started from: `Document.stamp()`, checked by `is_current`.
Stamp = NewType("Stamp", int)


class Document:
    """What the server knows about one document: its text, modules, results, diagnostics."""

    def __init__(self, uri: str, text: str, version: int | None, path: str | None = None, *,
                 notebook: Program | None = None, transient: bool = False) -> None:
        self._uri = uri
        self._path = path
        self._text = text
        self._version = version
        # A notebook: `text` is its program (source/notebook_program.py); this maps its lines
        # to cells.
        self._notebook = notebook
        self._published_cells: frozenset[str] = frozenset()  # the cells holding its diagnostics
        # Read from disk for one request: nothing recorded on it outlives the request.
        self._transient = transient
        self._closed = False
        self._generation = 0  # bumps on every text change (versions may be None)
        self._modules: list[discovery.ModuleInfo] | None = None
        # The discovery settings last used: fingerprints depend on them (inputs status).
        self._settings: tuple[dict[str, str], str | None] = ({}, None)
        self._results: dict[tuple[str, str], LowerResult] = {}
        self._errors: dict[str, LensError] = {}
        self._verdicts: dict[str, dict[str, Verdict]] = {}
        self._verify: dict[str, VerifyResult] = {}
        self._verify_on: dict[str, str] = {}  # the target each Verify ran (linalg, iree-cpu)
        self._diagnostics: dict[str, list[DiagRecord]] = {}
        # Set by edits: the text the results were made for, and the modules that had errors
        # then. Which results survive is decided when they are next read (`_settle`), so a
        # burst of keystrokes costs one fingerprint comparison, not one per keystroke.
        self._results_text: str | None = None
        self._errored: set[str] = set()

    # -- identity, text and freshness ---------------------------------------------------

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def path(self) -> str | None:
        """The file on disk, when the URI names one."""
        return self._path

    @property
    def version(self) -> int | None:
        """The client's version of the text (None for a document read from disk)."""
        return self._version

    @property
    def text(self) -> str:
        return self._text

    @property
    def lines(self) -> list[str]:
        """The text's lines; none for a document too large to analyse."""
        return [] if self.too_large else self._text.splitlines()

    @property
    def too_large(self) -> bool:
        """Too large to analyse (`MAX_ANALYSED_BYTES`): kept in sync, never parsed."""
        return len(self._text) > MAX_ANALYSED_BYTES

    @property
    def generation(self) -> int:
        """How many times the text changed since the document opened."""
        return self._generation

    def stamp(self) -> Stamp:
        """The current text, for work that records its findings later."""
        return Stamp(self._generation)

    def is_current(self, stamp: Stamp) -> bool:
        """Whether findings of the text `stamp` still hold: same text, still open."""
        return stamp == self._generation and not self._closed and not self._transient

    def close(self) -> None:
        """The editor closed it: whatever is still running records nothing any more."""
        self._closed = True

    def update(self, text: str, version: int | None,
               changes: Sequence[Any] | None = None) -> None:
        """Take a new text: results of changed modules go, diagnostics follow their lines or go.

        `changes` are the client's content changes (LSP ranges), when it sent some.
        """
        kept = {k: v for k, v in self._diagnostics.items() if k != STATIC and v}
        if kept and (self.too_large or len(text) > MAX_ANALYSED_BYTES):
            kept = {}  # no line diff of megabytes: the next check publishes again
        if kept:
            line_map = map_lines(self._text.splitlines(), text.splitlines(), changes)
            kept = {
                key: [m for r in records if (m := shift_record(r, line_map)) is not None]
                for key, records in kept.items()
            }
        self._diagnostics = kept
        if self._results_text is None and (self._results or self._verdicts or self._verify):
            self._results_text = self._text
        # Errors always go (they may come from code outside a module's fingerprint, e.g. a
        # syntax error elsewhere), and so do the results of the modules that had them.
        self._errored |= set(self._errors)
        self._errors.clear()
        self._text = text
        self._version = version
        self._generation += 1
        self._modules = None

    def set_version(self, version: int | None) -> None:
        """A new version of the same text (a notebook's metadata, outputs or cells moved)."""
        self._version = version

    # -- notebook -------------------------------------------------------------------------

    @property
    def notebook(self) -> Program | None:
        """A notebook's program: its lines mapped to cells; None for a file."""
        return self._notebook

    def adopt_program(self, program: Program) -> None:
        """The notebook's program as rebuilt from its cells (same text, or taken by `update`)."""
        self._notebook = program

    def forget_cells(self) -> None:
        """The notebook closed: no cell holds its findings any more (publishing then empties
        each cell published to)."""
        if self._notebook is not None:
            self._notebook.spans.clear()
            self._notebook.problems.clear()

    @property
    def published_cells(self) -> frozenset[str]:
        """The notebook cells its diagnostics were last published to."""
        return self._published_cells

    def cells_published(self, cells: set[str] | frozenset[str]) -> None:
        """Its diagnostics were published to `cells` (and emptied on the others)."""
        self._published_cells = frozenset(cells)

    # -- modules (static) ---------------------------------------------------------------

    def modules(self, settings_inputs: dict[str, str],
                workspace: str | None) -> list[discovery.ModuleInfo]:
        """The modules of this text (static discovery, cached per text); none when the text
        is too large to analyse."""
        if self._modules is None and self.too_large:
            self._modules = []
        if self._modules is None:
            self._settings = (dict(settings_inputs), workspace)
            self._modules = discovery.find_modules(
                self._text, self.path, settings_inputs=settings_inputs, workspace=workspace
            )
        return self._modules

    def forget_modules(self) -> None:
        """Re-run discovery next time (e.g. the example-input settings changed)."""
        self._modules = None

    # -- lowering results ---------------------------------------------------------------

    def result(self, module: str, target: str) -> LowerResult | None:
        """The result of `module` at `target` for the current text, if known."""
        self._settle()
        return self._results.get((module, target))

    def error(self, module: str) -> LensError | None:
        """The error that stopped the last check of `module` (load, inputs, export, worker)."""
        return self._errors.get(module)

    def verdicts(self, module: str) -> dict[str, Verdict]:
        """target → how `module` fared in the last check of the current text."""
        self._settle()
        return dict(self._verdicts.get(module, {}))

    def verify_result(self, module: str,
                      on: Callable[[str], bool] | None = None) -> VerifyResult | None:
        """The last Verify result of `module` for the current text (`on`: only when the
        target it ran passes, e.g. an IREE target's run for IREE's lens)."""
        self._settle()
        result = self._verify.get(module)
        if result is not None and on is not None and not on(self._verify_on.get(module, "")):
            return None
        return result

    def record_results(self, stamp: Stamp, module: str, results: Iterable[LowerResult], *,
                       verdicts: bool = True) -> bool:
        """Record results of `module` (and, for check targets, their verdicts).

        A success replaces the error of an earlier check. False when the text moved on.
        """
        if not self.is_current(stamp):
            return False
        self._settle()
        if self._errors.pop(module, None) is not None:
            self._verdicts.pop(module, None)  # the error's verdicts, not these results'
        for result in results:
            self._results[(module, result.target)] = result
            if verdicts:
                self._verdicts.setdefault(module, {})[result.target] = verdict_of(result)
        return True

    def record_failure(self, stamp: Stamp, module: str, err: LensError,
                       targets: Iterable[str]) -> bool:
        """Record a check of `module` that failed as a whole: every target fails alike."""
        if not self.is_current(stamp):
            return False
        self._settle()
        self._errors[module] = err
        self._verdicts[module] = {t: Verdict(ok=False, error=err.message) for t in targets}
        return True

    def forget_results(self) -> None:
        """Drop every lowering result (a result-changing setting or trust changed)."""
        self._results_text = None
        self._errored = set()
        self._results.clear()
        self._errors.clear()
        self._verdicts.clear()
        self._verify.clear()
        self._verify_on.clear()

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
                self._text, name, self.path, settings_inputs=settings, workspace=workspace)

        kept = {name for name in names if name not in errored and same(name)}
        self._results = {k: v for k, v in self._results.items() if k[0] in kept}
        self._verdicts = {k: v for k, v in self._verdicts.items() if k in kept}
        self._verify = {k: v for k, v in self._verify.items() if k in kept}
        self._verify_on = {k: v for k, v in self._verify_on.items() if k in kept}

    # -- Verify ---------------------------------------------------------------------------

    def record_verify(self, stamp: Stamp, module: str, result: VerifyResult,
                      records: list[DiagRecord], target: str = "linalg") -> bool:
        """Record a Verify verdict of `module` (run at `target`) and its diagnostics. False
        when stale."""
        if not self.is_current(stamp):
            return False
        self._settle()
        self._verify[module] = result
        self._verify_on[module] = target
        self._diagnostics[_VERIFY + module] = records
        return True

    # -- diagnostics ----------------------------------------------------------------------

    def diagnostic_records(self) -> list[DiagRecord]:
        """Every diagnostic record to publish, of every bucket."""
        return [r for records in self._diagnostics.values() for r in records]

    def set_static_diagnostics(self, records: list[DiagRecord]) -> None:
        """The findings that need no lowering (always of the current text)."""
        self._diagnostics[STATIC] = records

    def record_diagnostics(self, stamp: Stamp, module: str, records: list[DiagRecord]) -> bool:
        """Record the findings of one module's check. False when the text moved on."""
        if not self.is_current(stamp):
            return False
        self._diagnostics[module] = records
        return True

    def drop_stale_verify_diagnostics(self) -> None:
        """Verify findings whose verdict went with an older text go (at a new check)."""
        self._settle()
        for key in [k for k in self._diagnostics if k.startswith(_VERIFY)]:
            if key[len(_VERIFY):] not in self._verify:
                del self._diagnostics[key]

    def clear_diagnostics(self) -> None:
        self._diagnostics.clear()

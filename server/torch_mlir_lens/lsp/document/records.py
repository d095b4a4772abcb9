"""What a document records about its modules: diagnostic records and backend verdicts."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types

from torch_mlir_lens.findings import Finding
from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.rules.verdict import backend_verdict


@dataclass(frozen=True, eq=False)
class DiagRecord:
    """A finding placed in this document: the finding (`findings/`: what it says) and its
    range, which follows its line as the text is edited (`line_moves.py`)."""

    finding: Finding
    range: types.Range

    @property
    def module(self) -> str:
        """The module whose check found it ("" for a finding of the whole file)."""
        return self.finding.module or ""

    @property
    def kind(self) -> str:
        return str(self.finding.kind)


@dataclass
class Verdict:
    """How one module fared at one backend in the last check."""

    ok: bool
    unsupported: tuple[str, ...] = ()  # op names, one per unsupported op occurrence
    error: str | None = None  # export / worker failure that stopped the check
    rewrites: tuple[str, ...] = ()  # the rewrites it was lowered through
    error_kind: str | None = None  # the kind of `error` (`missing-dependency`, ...)
    not_run: bool = False  # an IREE target compiled for a device this machine lacks


def verdict_of(result: LowerResult) -> Verdict:
    """A result's verdict for the lens: ok, or the unsupported ops / the error that stopped it.

    The rule is rules/verdict.py's, the one `check` uses: the same count of ops, the same error.
    """
    verdict = backend_verdict(result)
    error = kind = None
    if verdict.failed:
        error = verdict.error.message if verdict.error else "lowering failed"
        kind = str(verdict.error.kind) if verdict.error else None
    iree = result.stats.get("iree")
    not_run = isinstance(iree, dict) and bool(iree.get("compiled")) and \
        iree.get("ran_here") is False
    return Verdict(ok=verdict.ok, unsupported=tuple(d.op or "?" for d in verdict.culprits),
                   error=error, rewrites=tuple(result.rewrites), error_kind=kind,
                   not_run=not_run)

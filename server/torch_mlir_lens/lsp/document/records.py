"""What a document records about its modules: diagnostic records and backend verdicts."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types

from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.rules.verdict import backend_verdict


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
    reason: str | None = None  # why the backend refuses the op, when known
    # The proven rewrites taking the module past it on its backend: (names, max error), with
    # the targets they were proven on (lsp/checks/rewrite_offers.py).
    offer: tuple[tuple[str, ...], float | None] | None = None


@dataclass
class Verdict:
    """How one module fared at one backend in the last check."""

    ok: bool
    unsupported: tuple[str, ...] = ()  # op names, one per unsupported op occurrence
    error: str | None = None  # export / worker failure that stopped the check
    rewrites: tuple[str, ...] = ()  # the rewrites it was lowered through


def verdict_of(result: LowerResult) -> Verdict:
    """A result's verdict for the lens: ok, or the unsupported ops / the error that stopped it.

    The rule is rules/verdict.py's, the one `check` uses: the same count of ops, the same error.
    """
    verdict = backend_verdict(result)
    error = None
    if verdict.failed:
        error = verdict.error.message if verdict.error else "lowering failed"
    return Verdict(ok=verdict.ok, unsupported=tuple(d.op or "?" for d in verdict.culprits),
                   error=error, rewrites=tuple(result.rewrites))

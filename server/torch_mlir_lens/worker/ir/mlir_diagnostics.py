"""Capture MLIR diagnostics instead of letting MLIR print them to native fd 2.

torch-mlir's `run_pipeline_with_repro_report` sets `emit_error_diagnostics = True` (errors go to
fd 2, the exception carries none) and writes a repro file with every weight to $TMPDIR. We run
passes with our own `PassManager` inside `captured(ctx)` instead: every diagnostic (errors,
warnings, remarks) is swallowed by a handler and kept as plain data.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from torch_mlir import ir
from torch_mlir.passmanager import PassManager


@dataclass
class Diag:
    """One MLIR diagnostic as data: severity name, message and location text (`loc(...)`)."""

    severity: str
    message: str
    location: str
    notes: list[Diag] = field(default_factory=list)


def _severity_name(severity: Any) -> str:
    text = str(severity).rsplit(".", 1)[-1].lower()
    return text or "error"


def _to_diag(d: Any) -> Diag:
    notes = [_to_diag(n) for n in getattr(d, "notes", [])]
    return Diag(_severity_name(d.severity), str(d.message), str(d.location), notes)


@contextmanager
def captured(ctx: ir.Context) -> Iterator[list[Diag]]:
    """Collect every diagnostic emitted in `ctx` while the block runs; nothing reaches fd 2."""
    diags: list[Diag] = []

    def handler(d: Any) -> bool:
        diags.append(_to_diag(d))
        return True  # handled: MLIR must not print it

    ctx.emit_error_diagnostics = False
    handle = ctx.attach_diagnostic_handler(handler)
    try:
        yield diags
    finally:
        handle.detach()


def error_diags(exc: ir.MLIRError, collected: list[Diag]) -> list[Diag]:
    """The error diagnostics of a failed pass run, from the exception or else the handler."""
    from_exc = [_to_diag(d) for d in getattr(exc, "error_diagnostics", [])]
    if from_exc:
        return from_exc
    errors = [d for d in collected if d.severity == "error"]
    if errors:
        return errors
    return [Diag("error", str(exc).strip() or "pass pipeline failed", "loc(unknown)")]


def pipeline_errors(module_op: Any, pipeline: str) -> list[Diag] | None:
    """Run `pipeline` on `module_op` in place, diagnostics captured: None when it succeeds,
    else its error diagnostics."""
    ctx = module_op.context
    with ctx, captured(ctx) as diags:
        try:
            PassManager.parse(pipeline, context=ctx).run(module_op.operation)
        except ir.MLIRError as exc:
            return error_diags(exc, diags)
    return None

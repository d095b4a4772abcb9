"""The typed answers of `torchMlirLens/lower` and `/verify`, built from the engine's results.

Results use file paths and snake_case JSON; the answers (`protocol.lsp`) use URIs for what the
editor opens (lower) and camelCase on the wire, which the server's converter writes. Verify's
findings stay by file path, as the CLI's `--json` gives them. JSON has no inf/nan: non-finite
floats go as "inf"/"-inf"/"nan" (`protocol.framing.json_number`), as in the worker's replies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch_mlir_lens.lsp.wire.convert import path_to_uri
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.framing import json_number
from torch_mlir_lens.protocol.results import LensDiagnostic, LensError, LowerResult
from torch_mlir_lens.protocol.verify_results import (
    Divergence,
    SizeCheck,
    VerifyOutput,
    VerifyResult,
)


def camel(name: str) -> str:
    """snake_case → camelCase (as lsprotocol renames fields)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_names(values: Mapping[str, Any]) -> dict[str, Any]:
    """An open-ended map of named values (engine counters, phase timings) with camelCase names.

    Only the names change, and a non-finite float becomes "inf"/"-inf"/"nan" (JSON has no
    such numbers, and one would make the whole answer unreadable to the client).
    """
    return {camel(str(name)): json_number(value) if isinstance(value, float) else value
            for name, value in values.items()}


def lens_diagnostic(diag: LensDiagnostic) -> lens_types.LensDiagnostic:
    """A result diagnostic with URIs instead of paths."""
    return lens_types.LensDiagnostic(
        severity=diag.severity,
        message=diag.message,
        kind=diag.kind,
        uri=path_to_uri(diag.file) if diag.file else None,
        line=diag.line,
        op=diag.op,
        target=diag.target,
        related=[lens_types.RelatedLocation(uri=path_to_uri(r.file), line=r.line,
                                            message=r.message) for r in diag.related],
        cause=diag.cause,
        ops=diag.ops,
        knock_on=[
            lens_types.KnockOn(op=k.get("op"),
                               uri=path_to_uri(k["file"]) if k.get("file") else None,
                               line=k.get("line"))
            for k in diag.knock_on
        ] if diag.knock_on else None,
        reason=diag.reason,
        node=None if diag.node is None else lens_types.OnnxNodeRef(
            index=diag.node.index, name=diag.node.name, op_type=diag.node.op_type,
            domain=diag.node.domain, opset=diag.node.opset),
    )


def lower_response(result: LowerResult) -> lens_types.LowerResponse:
    """`torchMlirLens/lower`'s answer for one result (docs/contracts.md)."""
    # A big model's map has ~12,000 entries over a handful of files: each file's URI once.
    uri = {path: path_to_uri(path)
           for path in {m.file for m in result.map}.union(result.frames.files)}
    frames = None
    table = result.frames
    if table:
        # Chains through library code, as the engine's table, with URIs for paths. Its rows
        # are (irLine, chain) pairs already: one list of them, not one new list per row.
        frames = lens_types.FrameTable(
            files=[uri[f] for f in table.files],
            library=[i for i, lib in enumerate(table.library) if lib],
            chains=[[x for pair in chain for x in pair] for chain in table.chains],
            rows=list(table.rows),
        )
    mapping = lens_types.IrLineMapping
    return lens_types.LowerResponse(
        module=result.module,
        target=result.target,
        ok=result.ok,
        ir=result.ir,
        map=[mapping(m.ir_line, uri[m.file], m.line, m.depth) for m in result.map],
        diagnostics=[lens_diagnostic(d) for d in result.diagnostics],
        stats=camel_names(result.stats),
        timings={name: json_number(t) for name, t in result.timings.items()},
        inputs_source=result.inputs_source,
        partial=result.partial,
        frames=frames,
        passes=None if result.passes is None else [
            lens_types.PassIr(name=p.name, ir=p.ir) for p in result.passes],
        rewrites=list(result.rewrites) or None,
    )


def lower_error(module: str, target: str, err: LensError) -> lens_types.LowerResponse:
    """The `lower` answer of a lowering that produced no IR at all."""
    diag = lens_diagnostic(err.to_diagnostic(target))
    return lens_types.LowerResponse(
        module=module, target=target, ok=False, ir="", map=[], diagnostics=[diag], stats={},
        timings={}, inputs_source=None, partial=False,
        error=lens_types.LowerError(kind=err.kind, message=err.message, uri=diag.uri,
                                    line=err.line),
    )


def _file_diagnostic(diag: LensDiagnostic) -> lens_types.FileDiagnostic:
    """A verify finding, by file path (as the CLI's `--json` gives it)."""
    return lens_types.FileDiagnostic(
        severity=diag.severity,
        message=diag.message,
        kind=diag.kind,
        file=diag.file,
        line=diag.line,
        op=diag.op,
        target=diag.target,
        cause=diag.cause,
        ops=diag.ops,
        knock_on=None if diag.knock_on is None else [
            lens_types.FileKnockOn(op=k.get("op"), file=k.get("file"), line=k.get("line"))
            for k in diag.knock_on],
        related=[lens_types.FileRelatedLocation(file=r.file, line=r.line, message=r.message)
                 for r in diag.related],
    )


def _output(out: VerifyOutput) -> lens_types.OutputComparison:
    return lens_types.OutputComparison(
        index=out.index, shape=list(out.shape), dtype=out.dtype,
        max_abs_err=json_number(out.max_abs_err), max_rel_err=json_number(out.max_rel_err),
        worst_index=list(out.worst_index), ok=out.ok, rtol=out.rtol, atol=out.atol,
        message=out.message,
    )


def _divergence(div: Divergence | None) -> lens_types.Divergence | None:
    if div is None:
        return None
    return lens_types.Divergence(
        file=div.file, line=div.line, shape=list(div.shape), dtype=div.dtype,
        max_abs_err=json_number(div.max_abs_err), worst_index=list(div.worst_index),
        message=div.message,
    )


def _at_size(check: SizeCheck) -> lens_types.VerifyAtSize:
    return lens_types.VerifyAtSize(
        dims=[lens_types.DimSize(name=d.name, size=d.size) for d in check.dims],
        example=check.example, ok=check.ok, message=check.message,
        max_abs_err=json_number(check.max_abs_err), outputs=[_output(o) for o in check.outputs],
    )


def verify_response(verdict: VerifyResult) -> lens_types.VerifyResponse:
    """`torchMlirLens/verify`'s answer: the verdict, camelCase on the wire."""
    return lens_types.VerifyResponse(
        module=verdict.module,
        ok=verdict.ok,
        outputs=[_output(o) for o in verdict.outputs],
        rtol=verdict.rtol,
        atol=verdict.atol,
        timings=camel_names(verdict.timings),
        diagnostics=[_file_diagnostic(d) for d in verdict.diagnostics],
        message=verdict.message,
        kind=verdict.kind,
        max_abs_err=json_number(verdict.max_abs_err),
        divergence=_divergence(verdict.divergence),
        sizes=[_at_size(c) for c in verdict.sizes],
        speed=compiled_speed(verdict.speed),
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def compiled_speed(speed: Mapping[str, Any] | None) -> lens_types.CompiledSpeed | None:
    """An IREE run's time against eager (`{target, device, compiled_ms, eager_ms, threads,
    runs}`), typed; None when there is none."""
    if not speed:
        return None
    return lens_types.CompiledSpeed(
        target=str(speed.get("target", "")), device=str(speed.get("device", "")),
        compiled_ms=_number(speed.get("compiled_ms")), eager_ms=_number(speed.get("eager_ms")),
        threads=_count(speed.get("threads")), runs=_count(speed.get("runs")))

"""Plain result shapes shared by the worker, the engine, the CLI and the language server.

Everything here is data: no torch, no MLIR, no I/O. Each class converts to and from the
JSON that crosses the worker pipe, that `torch-mlir-lens ... --json` prints and that the
language server reshapes (camelCase) for its custom requests. Lines are 1-based everywhere.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from torch_mlir_lens.protocol.frames import FrameTable, SourceFrame
from torch_mlir_lens.protocol.onnx_graphs import OnnxGraph, OnnxNode


class ErrorKind(StrEnum):
    """Why a job did not produce IR (or produced IR with problems)."""

    UNSUPPORTED_OP = "unsupported-op"  # an op the target cannot lower
    LOWERING_ERROR = "lowering-error"  # a pass failed without naming an op (verifier, ...)
    EXPORT_ERROR = "export-error"  # torch.export / FX import failed
    LOAD_ERROR = "load-error"  # the user's file failed to execute (definitions part)
    SYNTAX_ERROR = "syntax-error"
    UNKNOWN_MODULE = "unknown-module"
    INPUTS_MISSING = "inputs-missing"  # no example inputs could be found for the module
    BAD_INPUTS = "bad-inputs"  # an inputs/init expression or file failed
    BAD_PIPELINE = "bad-pipeline"
    BAD_REQUEST = "bad-request"
    WORKER_CRASH = "worker-crash"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory-limit"
    CANCELLED = "cancelled"
    VERIFY_MISMATCH = "verify-mismatch"
    VERIFY_ERROR = "verify-error"
    WRITE_ERROR = "write-error"
    # IR that lowers, but that a known upstream bug makes compute wrong values (a warning).
    KNOWN_MISCOMPILE = "known-miscompile"
    # A target whose compiler is not installed (IREE): says what to install.
    MISSING_DEPENDENCY = "missing-dependency"
    # IREE failed to compile IR that torch-mlir lowered (its words, its pass, at the line).
    COMPILE_ERROR = "compile-error"
    # Information: compiled for a device this machine does not have, so not run.
    NOT_RUN = "not-run"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


@dataclass
class RelatedLocation:
    """Another place that explains a diagnostic (e.g. the library line an op comes from)."""

    file: str
    line: int
    message: str


@dataclass
class LensDiagnostic:
    """One problem, located at a source line when one is known (else on the module)."""

    severity: str
    message: str
    kind: str = ErrorKind.UNSUPPORTED_OP
    file: str | None = None
    line: int | None = None
    op: str | None = None  # e.g. "torch.aten.roll" / "aten.roll"
    target: str | None = None
    # Library lines behind a problem found inside library code, innermost first.
    related: list[RelatedLocation] = field(default_factory=list)
    # An unsupported-op diagnostic names one cause: `cause` as people read it ("`torch.roll`
    # (decomposed to `aten.slice.Tensor`, `aten.cat`)"), `ops` every rejected op of it (the
    # primary `op` first), `knock_on` the ops that fail only because of it ({op, file, line}).
    cause: str | None = None
    ops: list[str] | None = None
    knock_on: list[dict[str, Any]] | None = None
    # Why the backend refuses the op: its own words, else a rule's (rules/refusals.py).
    reason: str | None = None
    # In an `.onnx` file: the node it is about (`line` is then the node's position).
    node: OnnxNode | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.related:
            del data["related"]  # the usual case: keep the JSON as it was
        if self.reason is None:
            del data["reason"]
        if self.node is None:
            del data["node"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LensDiagnostic:
        return cls(
            severity=data["severity"], message=data["message"],
            kind=data.get("kind", ErrorKind.UNSUPPORTED_OP), file=data.get("file"),
            line=data.get("line"), op=data.get("op"), target=data.get("target"),
            related=[RelatedLocation(r["file"], int(r["line"]), r.get("message", ""))
                     for r in data.get("related") or []],
            cause=data.get("cause"), ops=data.get("ops"), knock_on=data.get("knock_on"),
            reason=data.get("reason"),
            node=OnnxNode.from_json(data["node"]) if isinstance(data.get("node"), dict)
            else None,
        )


@dataclass
class IrLineMapping:
    """Printed IR line `ir_line` was produced by source `file:line`.

    An IR line has one entry per user frame of its op's call chain; `depth` 0 is the innermost
    user frame (e.g. the line inside a submodule's forward), higher depths are its callers (the
    line in the parent's forward that called the submodule).
    """

    ir_line: int
    file: str
    line: int
    depth: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IrLineMapping:
        return cls(
            ir_line=data["ir_line"], file=data["file"], line=data["line"],
            depth=data.get("depth", 0),
        )


def _compact_map(mapping: list[IrLineMapping]) -> dict[str, Any]:
    files: dict[str, int] = {}
    rows = [[m.ir_line, files.setdefault(m.file, len(files)), m.line, m.depth] for m in mapping]
    return {"files": list(files), "rows": rows}


def _read_map(data: list[dict[str, Any]] | dict[str, Any]) -> list[IrLineMapping]:
    """A source map in either shape `LowerResult.to_json` writes."""
    if isinstance(data, dict):
        files = data["files"]
        return [IrLineMapping(ir_line, files[f], line, depth)
                for ir_line, f, line, depth in data["rows"]]
    return [IrLineMapping.from_json(m) for m in data]


@dataclass
class PassIr:
    """The IR after one pass (print-after-all)."""

    name: str
    ir: str


@dataclass
class LowerResult:
    """The IR of one module at one target, with its source map and problems.

    `ok` is False when the target could not be reached; `ir` then holds the furthest IR that
    was produced (e.g. the torch-dialect IR) or "" if even the export failed.
    `stats` keys: ops, mapped_ops, unmapped_ops, unmapped_op_names (list), ir_bytes; for MLIR
    targets inherited_ops and library_ops (ops made inside library code, see `frames`); from a
    worker job also construction ("meta": built without weights, or "real"),
    construction_reason (why, e.g. the fallback's error) and weight_bytes.
    `timings` keys (seconds): load, inputs, export, import, lower, print, total.
    """

    module: str
    target: str
    ok: bool
    ir: str = ""
    map: list[IrLineMapping] = field(default_factory=list)
    diagnostics: list[LensDiagnostic] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    passes: list[PassIr] | None = None
    inputs_source: str | None = None  # how the inputs were found: "comment", "inferred", ...
    # Whole call chains (library frames included) of the IR lines made inside library code.
    frames: FrameTable = field(default_factory=FrameTable)
    # ok=False and partial=True: `ir` is the target IR of everything the backend accepts, each
    # rejected op kept in place as a call (worker/culprits/partial.py); the diagnostics name them.
    partial: bool = False
    # The rewrites this lowering went through (worker/rewrites/), by name: each made some ops.
    rewrites: list[str] = field(default_factory=list)
    # An `.onnx` file's graph (its nodes are the `line`s of `map` and `diagnostics`).
    onnx: OnnxGraph | None = None

    def to_json(self, *, compact_map: bool = False) -> dict[str, Any]:
        """The result as JSON; `compact_map` (the worker's replies) sends the source map as
        `{"files": [...], "rows": [[ir_line, file index, line, depth], ...]}`: a big model's
        map is ~12,000 entries that would otherwise repeat the file path and the keys; and the
        library chains as `frames` (`FrameTable.to_json`). Without it, each depth-0 map entry
        of an IR line made inside library code carries that op's whole `chain`."""
        extra: dict[str, Any] = {}
        if compact_map and self.frames:
            extra["frames"] = self.frames.to_json()
        return {
            "module": self.module,
            "target": self.target,
            "ok": self.ok,
            "ir": self.ir,
            "map": _compact_map(self.map) if compact_map else _map_with_chains(self),
            **extra,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "stats": self.stats,
            "timings": self.timings,
            "passes": None if self.passes is None else [asdict(p) for p in self.passes],
            "inputs_source": self.inputs_source,
            "partial": self.partial,
            **({"rewrites": list(self.rewrites)} if self.rewrites else {}),
            **({"onnx": self.onnx.to_json()} if self.onnx is not None else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LowerResult:
        passes = data.get("passes")
        return cls(
            module=data["module"],
            target=data["target"],
            ok=data["ok"],
            ir=data.get("ir", ""),
            map=_read_map(data.get("map") or []),
            diagnostics=[LensDiagnostic.from_json(d) for d in data.get("diagnostics", [])],
            stats=data.get("stats", {}),
            timings=data.get("timings", {}),
            passes=None if passes is None else [PassIr(**p) for p in passes],
            inputs_source=data.get("inputs_source"),
            frames=(FrameTable.from_json(data["frames"]) if "frames" in data
                    else _chains_from_map(data.get("map"))),
            partial=bool(data.get("partial", False)),
            rewrites=[str(r) for r in data.get("rewrites") or []],
            onnx=OnnxGraph.from_json(data["onnx"]) if isinstance(data.get("onnx"), dict)
            else None,
        )


def _map_with_chains(result: LowerResult) -> list[dict[str, Any]]:
    """Map entries as JSON; a depth-0 entry of an IR line listed in `frames` gets `chain`:
    the first of its chains whose innermost user frame is the entry's line."""
    out = []
    for m in result.map:
        entry = m.to_json()
        if m.depth == 0 and result.frames:
            for chain in result.frames.chains_of(m.ir_line):
                user = next((f for f in chain if not f.library), None)
                if user is not None and (user.file, user.line) == (m.file, m.line):
                    entry["chain"] = [f.to_json() for f in chain]
                    break
        out.append(entry)
    return out


def _chains_from_map(data: Any) -> FrameTable:
    table = FrameTable()
    if isinstance(data, list):
        for m in data:
            if m.get("chain"):
                table.add(m["ir_line"], [SourceFrame(f["file"], int(f["line"]),
                                                     bool(f.get("library")))
                                         for f in m["chain"]])
    return table


class LensError(Exception):
    """A failure that ends a job, with the kind and, when known, the user's line.

    `related`: for a failure raised inside library code, the library lines on the way from
    the user's line to where it was raised, innermost first (as `LensDiagnostic.related`).
    `depends`: the other user files the failed job had read (its answer goes when one changes).
    """

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        related: list[RelatedLocation] | None = None,
        depends: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.file = file
        self.line = line
        self.related = list(related or [])
        self.depends = list(depends or [])

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "message": self.message, "file": self.file,
                                "line": self.line}
        if self.related:
            data["related"] = [asdict(r) for r in self.related]
        if self.depends:
            data["depends"] = list(self.depends)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LensError:
        depends = data.get("depends")
        return cls(data["kind"], data["message"], file=data.get("file"), line=data.get("line"),
                   related=[RelatedLocation(r["file"], int(r["line"]), r.get("message", ""))
                            for r in data.get("related") or []],
                   depends=[d for d in depends if isinstance(d, str)]
                   if isinstance(depends, list) else None)

    def to_diagnostic(self, target: str | None = None) -> LensDiagnostic:
        return LensDiagnostic(
            severity=Severity.ERROR, message=self.message, kind=self.kind,
            file=self.file, line=self.line, target=target, related=list(self.related),
        )

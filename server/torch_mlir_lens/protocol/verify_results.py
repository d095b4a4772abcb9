"""The shapes a verification returns: each compared output, the first diverging line, and the
verdict of a whole module (`verify` jobs, `Engine.verify`, the CLI's `verify`, the editor).

Data only (no torch), like `protocol/results.py`. They convert to and from the JSON of the worker's
reply and of `torch-mlir-lens verify --json`; JSON has no inf/nan, so those travel as
strings ("inf", "nan").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from torch_mlir_lens.protocol.framing import json_number as _json_float
from torch_mlir_lens.protocol.results import LensDiagnostic


@dataclass
class VerifyOutput:
    """The comparison of one (flattened) output with its eager value."""

    index: int
    shape: list[int]
    dtype: str  # torch dtype name of the eager value, e.g. "float32"
    max_abs_err: float
    max_rel_err: float  # over elements whose eager value is non-zero
    worst_index: list[int]  # the element furthest from (or most beyond) its tolerance
    ok: bool
    message: str
    rtol: float = 0.0  # the tolerances applied to this output
    atol: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "max_abs_err": _json_float(self.max_abs_err),
            "max_rel_err": _json_float(self.max_rel_err),
            "worst_index": list(self.worst_index),
            "ok": self.ok,
            "message": self.message,
            "rtol": self.rtol,
            "atol": self.atol,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerifyOutput:
        return cls(
            index=data["index"],
            shape=list(data.get("shape", [])),
            dtype=data.get("dtype", ""),
            max_abs_err=_from_json_float(data.get("max_abs_err", 0.0)),
            max_rel_err=_from_json_float(data.get("max_rel_err", 0.0)),
            worst_index=list(data.get("worst_index", [])),
            ok=data["ok"],
            message=data.get("message", ""),
            rtol=data.get("rtol", 0.0),
            atol=data.get("atol", 0.0),
        )


@dataclass
class Divergence:
    """Where compiled and eager values first part ways: a user line (by file path)."""

    file: str
    line: int
    shape: list[int]
    dtype: str
    max_abs_err: float
    worst_index: list[int]
    message: str

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "max_abs_err": _json_float(self.max_abs_err)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Divergence:
        return cls(
            file=data["file"], line=data["line"], shape=list(data.get("shape", [])),
            dtype=data.get("dtype", ""),
            max_abs_err=_from_json_float(data.get("max_abs_err", 0.0)),
            worst_index=list(data.get("worst_index", [])), message=data.get("message", ""),
        )


@dataclass
class DimSize:
    """The size one dynamic dim had in a run: its name (the `dynamic=` comment's) and size."""

    name: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "size": self.size}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DimSize:
        return cls(name=str(data["name"]), size=int(data["size"]))


def dims_text(dims: list[DimSize]) -> str:
    """"batch=2, seq=7": how a size of the dynamic dims is written in every message."""
    return ", ".join(f"{d.name}={d.size}" for d in dims)


@dataclass
class SizeCheck:
    """One run of the compiled module at one size of its dynamic dims, compared with eager.

    `example` marks the example inputs' own sizes; the others are inputs of other sizes made
    from the example's values (worker/verify/sizes.py). `message` is the verdict at that size
    ("✓ matches eager (max err 2e-07)", "✗ differs: output 0, ...", "✗ eager failed: ...").
    """

    dims: list[DimSize]
    example: bool
    ok: bool
    message: str
    max_abs_err: float = 0.0
    outputs: list[VerifyOutput] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dims": [d.to_json() for d in self.dims],
            "example": self.example,
            "ok": self.ok,
            "message": self.message,
            "max_abs_err": _json_float(self.max_abs_err),
            "outputs": [o.to_json() for o in self.outputs],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SizeCheck:
        return cls(
            dims=[DimSize.from_json(d) for d in data.get("dims", [])],
            example=bool(data.get("example", False)), ok=bool(data["ok"]),
            message=data.get("message", ""),
            max_abs_err=_from_json_float(data.get("max_abs_err", 0.0)),
            outputs=[VerifyOutput.from_json(o) for o in data.get("outputs", [])],
        )


@dataclass
class VerifyResult:
    """The verdict of one verification.

    `ok` is True only when every output matches. `kind` is None when ok, else an ErrorKind:
    "verify-mismatch" (compared, differs), "lowering-error" / "unsupported-op" (the IR could
    not be built or lowered; see `diagnostics`), "verify-error" (inputs, eager or JIT failed).
    `rtol`/`atol` are the requested tolerances (None: per-dtype defaults, see each output).
    `timings` keys (seconds): lower_llvm, jit, run, eager, compare, total (+ any from the
    caller, e.g. export).
    A module with dynamic dims runs at several sizes of them, one compilation: `sizes` has one
    SizeCheck per size, the example's first; `outputs` are the example size's comparisons and
    `ok` holds only if every size matched. Empty for a module without dynamic dims.
    """

    module: str
    ok: bool
    outputs: list[VerifyOutput] = field(default_factory=list)
    rtol: float | None = None
    atol: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    diagnostics: list[LensDiagnostic] = field(default_factory=list)
    message: str = ""
    kind: str | None = None
    max_abs_err: float = 0.0
    # On a mismatch, when found: the first user line whose values differ (divergence.py).
    divergence: Divergence | None = None
    inputs_source: str | None = None  # where the example inputs came from ("comment", ...)
    sizes: list[SizeCheck] = field(default_factory=list)
    # An IREE target's run (worker/iree/): the compiled module's time per call against
    # eager's, on the same inputs and threads: {"target", "compiled_ms", "eager_ms",
    # "threads", "runs", "device"}; None for the other targets.
    speed: dict[str, Any] | None = None

    def compared(self) -> bool:
        """True when some output was compared with eager (at some size)."""
        return bool(self.outputs) or any(check.outputs for check in self.sizes)

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "ok": self.ok,
            "outputs": [o.to_json() for o in self.outputs],
            "rtol": self.rtol,
            "atol": self.atol,
            "timings": self.timings,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "message": self.message,
            "kind": self.kind,
            # null when nothing was compared: an error of 0 would read as a perfect match
            "max_abs_err": _json_float(self.max_abs_err) if self.compared() else None,
            "divergence": None if self.divergence is None else self.divergence.to_json(),
            "inputs_source": self.inputs_source,
            "sizes": [c.to_json() for c in self.sizes],
            **({"speed": dict(self.speed)} if self.speed else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerifyResult:
        return cls(
            module=data["module"],
            ok=data["ok"],
            outputs=[VerifyOutput.from_json(o) for o in data.get("outputs", [])],
            rtol=data.get("rtol"),
            atol=data.get("atol"),
            timings=data.get("timings", {}),
            diagnostics=[LensDiagnostic.from_json(d) for d in data.get("diagnostics", [])],
            message=data.get("message", ""),
            kind=data.get("kind"),
            max_abs_err=_from_json_float(data.get("max_abs_err") or 0.0),
            divergence=None if data.get("divergence") is None
            else Divergence.from_json(data["divergence"]),
            inputs_source=data.get("inputs_source"),
            sizes=[SizeCheck.from_json(c) for c in data.get("sizes", [])],
            speed=dict(data["speed"]) if isinstance(data.get("speed"), dict) else None,
        )


def _from_json_float(value: float | str) -> float:
    return float(value)

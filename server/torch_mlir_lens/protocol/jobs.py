"""The worker's jobs and replies, typed (torch-free; the engine, the CLI and the worker share it).

A job travels as one flat JSON object, `{"id", "op", ...fields}` (`Job.to_json`); the worker
reads it back with `parse_job`, which checks every field's type and answers a wrong one as a
`bad-request` LensError naming the field. A reply is `Reply.to_json()`: `{"id", "ok",
"result" | "error", "restart"?, "programs"}`; `programs` lists the keys
(`protocol.programs.program_key`) of the exported programs the worker holds after the job.
The first frame a worker sends is a `Reply` with id 0 and result `{"ready": true, "pid"}`.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from torch_mlir_lens.protocol.results import ErrorKind, LensError

CONSTRUCT_POLICIES = ("auto", "meta", "real")
VIAS = ("fx", "onnx")  # ModuleJob.via
_M = typing.TypeVar("_M", bound="ModuleJob")


@dataclass(kw_only=True)
class Job:
    """A job of any kind; `op` names it on the wire."""

    op: ClassVar[str] = ""

    def to_json(self) -> dict[str, Any]:
        """The job as the worker reads it (no `id`: the client numbers its jobs)."""
        data = dataclasses.asdict(self)
        return {"op": self.op, **data} if self.op else data


@dataclass(kw_only=True)
class ModuleJob(Job):
    """The fields every job on one module of a file carries (docs/contracts.md)."""

    path: str  # the user's file (frames are matched against it)
    module: str  # class or function name in that file
    text: str | None = None  # the unsaved buffer; None → the file on disk
    inputs: str | None = None  # Python expression → tuple of example inputs
    inputs_file: str | None = None  # torch.save'd tuple / dict of kwargs
    init: str | None = None  # Python expression → tuple of constructor args
    settings_inputs: dict[str, str] = field(default_factory=dict)
    workspace: str | None = None  # root of relative paths in settings_inputs
    strict: bool = False  # torch.export strict mode
    construct: str = "auto"  # "auto" | "meta" | "real": how the module is built
    # The module's fingerprint (discovery/fingerprint.py), when known.
    fingerprint: str | None = None
    # Rewrites to lower with, beyond those of the module's comment (rules/rewrite_specs.py:
    # "erfinv@tosa", "histc", "auto"): the command line's and the project's.
    rewrites: list[str] = field(default_factory=list)
    # Repeated blocks lowered inline, not as one function per block (worker/blocks/).
    inline_blocks: bool = False
    # The persistent cache's folder, where the worker keeps traced blocks too (None: in its
    # memory only). The engine adds it to each job it sends; no cache key includes it.
    block_cache: str | None = None
    # How a PyTorch module reaches torch-mlir: "fx" (torch.export, the FX importer) or "onnx"
    # (torch.onnx.export, then the ONNX importer). An `.onnx` file is always the latter.
    via: str = "fx"
    # An `.onnx` file's dynamic dims (`dim_param`) → the size its inputs get (Verify, the
    # `shapes` fix); a dim not named here gets 1.
    dims: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Absolute paths; `construct`, `fingerprint`, `rewrites`, `inline_blocks` and
        `block_cache` only when set."""
        data = super().to_json()
        if not self.rewrites:
            del data["rewrites"]
        data["path"] = os.path.abspath(self.path)
        if self.inputs_file is not None:
            data["inputs_file"] = os.path.abspath(self.inputs_file)
        if self.construct == "auto":
            del data["construct"]
        if self.fingerprint is None:
            del data["fingerprint"]
        if not self.inline_blocks:
            del data["inline_blocks"]
        if self.block_cache is None:
            del data["block_cache"]
        if self.via == "fx":
            del data["via"]
        if not self.dims:
            del data["dims"]
        return data

    def module_fields(self) -> ModuleJob:
        """The common fields alone (what decides the exported program)."""
        return self.as_job(ModuleJob)

    def as_job(self, cls: type[_M], **fields: Any) -> _M:
        """A job of kind `cls` on this module: these common fields plus `fields`."""
        common = {f.name: getattr(self, f.name) for f in dataclasses.fields(ModuleJob)}
        return cls(**common, **fields)


@dataclass(kw_only=True)
class LowerJob(ModuleJob):
    """Lower to each target (and/or a custom pipeline) → `{"results": [LowerResult...]}`."""

    op: ClassVar[str] = "lower"
    targets: list[str] = field(default_factory=list)
    pipeline: str | None = None  # custom pipeline; its result's target is "custom"
    keep_weights: bool = False
    debug_info: bool = False
    print_after_all: bool = False
    list_unsupported: bool = True
    # IREE targets (rules/iree_targets.py): the architecture of each, when not its default
    # ({"iree-cuda": "sm_86"}), and whether to time the compiled module and its dispatches.
    iree_archs: dict[str, str] = field(default_factory=dict)
    profile: bool = False

    def to_json(self) -> dict[str, Any]:
        """`iree_archs` and `profile` only when set (the other targets' keys stay as they
        were)."""
        data = super().to_json()
        if not self.iree_archs:
            del data["iree_archs"]
        if not self.profile:
            del data["profile"]
        return data


@dataclass(kw_only=True)
class ExportJob(ModuleJob):
    """Write the IR at `target` to `output` atomically → `{"path", "bytes"}`."""

    op: ClassVar[str] = "export"
    output: str
    target: str = "linalg"
    bytecode: bool = False
    iree_arch: str | None = None  # an IREE target's architecture, when not its default

    def to_json(self) -> dict[str, Any]:
        """`iree_arch` only when set."""
        data = super().to_json()
        if self.iree_arch is None:
            del data["iree_arch"]
        return data


@dataclass(kw_only=True)
class ReproJob(ModuleJob):
    """Write a reproducer into `output_dir` → `{"mlir_path", "command"}`."""

    op: ClassVar[str] = "repro"
    output_dir: str
    target: str = "linalg"


@dataclass(kw_only=True)
class VerifyJob(ModuleJob):
    """JIT the Linalg IR (or `target`'s IR converted to Linalg), run it, compare with eager
    → `VerifyResult.to_json()`."""

    op: ClassVar[str] = "verify"
    rtol: float | None = None
    atol: float | None = None
    opt_level: int = 0
    target: str = "linalg"  # the backend whose IR runs: linalg, tosa or stablehlo

    def to_json(self) -> dict[str, Any]:
        """`target` only when not Linalg (an older worker reads the job as before)."""
        data = super().to_json()
        if self.target == "linalg":
            del data["target"]
        return data


@dataclass(kw_only=True)
class RewritesJob(ModuleJob):
    """Prove the rewrites of every op `targets` reject → `RewriteReport.to_json()`
    (protocol/rewrite_results.py)."""

    op: ClassVar[str] = "rewrites"
    targets: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class ExportCodeJob(ModuleJob):
    """Python that reproduces the module's IR at `target` with plain torch-mlir, its
    rewrites inlined → `{"code": str, "rewrites": [...]}`."""

    op: ClassVar[str] = "export-code"
    target: str = "linalg"


@dataclass(kw_only=True)
class GraphJob(ModuleJob):
    """The module's computation graph with each node's verdict at each of `targets` →
    `{"graph": ModuleGraph.to_json()}` (protocol/graph.py)."""

    op: ClassVar[str] = "graph"
    targets: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class ModulesJob(Job):
    """The file's modules (discovery) → `{"modules": [...]}`."""

    op: ClassVar[str] = "modules"
    path: str
    text: str | None = None


@dataclass(kw_only=True)
class PingJob(Job):
    """→ `{"pid"}`."""

    op: ClassVar[str] = "ping"


@dataclass(kw_only=True)
class StatsJob(Job):
    """→ `{"jobs_run", "exports_run", "cached_programs", "pid"}`."""

    op: ClassVar[str] = "stats"


# --- replies of the jobs whose answer is not a result type of its own ---------------------------


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class ExportReply:
    """An `export` job's answer: where the IR was written and its size."""

    path: str
    bytes: int | None = None
    # An IREE module compiled without its weights: what was left out (worker/iree/export.py).
    left_out: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if self.left_out is None:
            del data["left_out"]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], default_path: str = "") -> ExportReply:
        path, left_out = data.get("path"), data.get("left_out")
        return cls(path=path if isinstance(path, str) else default_path,
                   bytes=_int_or_none(data.get("bytes")),
                   left_out=left_out if isinstance(left_out, str) else None)


@dataclass
class ReproReply:
    """A `repro` job's answer: the reproducer's .mlir file and the command that replays it."""

    mlir_path: str
    command: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReproReply:
        return cls(mlir_path=str(data.get("mlir_path") or ""),
                   command=str(data.get("command") or ""))


@dataclass
class WorkerStats:
    """A `stats` job's answer: the worker's own counters."""

    jobs_run: int
    exports_run: int
    cached_programs: int
    pid: int | None
    # Repeated blocks (worker/blocks/block_cache.py): functions traced, and found traced in
    # the worker's memory and in the persistent cache's folder.
    block_traces: int = 0
    block_cache_hits: int = 0
    block_disk_hits: int = 0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WorkerStats:
        def count(name: str) -> int:
            return _int_or_none(data.get(name)) or 0

        return cls(jobs_run=count("jobs_run"), exports_run=count("exports_run"),
                   cached_programs=count("cached_programs"), pid=_int_or_none(data.get("pid")),
                   block_traces=count("block_traces"),
                   block_cache_hits=count("block_cache_hits"),
                   block_disk_hits=count("block_disk_hits"))


JOB_TYPES: dict[str, type[Job]] = {cls.op: cls for cls in (
    LowerJob, ExportJob, ReproJob, VerifyJob, RewritesJob, ExportCodeJob, GraphJob, ModulesJob,
    PingJob, StatsJob)}

AnyJob = (LowerJob | ExportJob | ReproJob | VerifyJob | RewritesJob | ExportCodeJob | GraphJob
          | ModulesJob | PingJob | StatsJob)


@dataclass
class Reply:
    """The worker's answer to one job."""

    id: int | None
    ok: bool
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # LensError.to_json()
    restart: str | None = None  # why the worker asks to be replaced
    programs: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """`{"id", "ok", "result" | "error", "restart"?, "programs"}`."""
        data: dict[str, Any] = {"id": self.id, "ok": self.ok}
        if self.ok:
            data["result"] = self.result if self.result is not None else {}
        else:
            data["error"] = self.error
        if self.restart:
            data["restart"] = self.restart
        data["programs"] = list(self.programs)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reply:
        """A reply frame, read leniently (an old or odd worker must not crash the client)."""
        result, error, programs = data.get("result"), data.get("error"), data.get("programs")
        return cls(
            id=data.get("id") if isinstance(data.get("id"), int) else None,
            ok=data.get("ok") is True,
            result=result if isinstance(result, dict) else None,
            error=error if isinstance(error, dict) else None,
            restart=str(data["restart"]) if data.get("restart") else None,
            programs=[p for p in programs if isinstance(p, str)]
            if isinstance(programs, list) else [],
        )


# --- reading a job -------------------------------------------------------------------------------


def _bad(message: str) -> LensError:
    return LensError(ErrorKind.BAD_REQUEST, message)


def _fits(value: Any, kind: Any) -> bool:
    """Whether a JSON value fits a field's annotation (the few kinds jobs use)."""
    origin = typing.get_origin(kind)
    if origin in (types.UnionType, typing.Union):
        return any(_fits(value, k) for k in typing.get_args(kind))
    if kind is type(None):
        return value is None
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind is str:
        return isinstance(value, str)
    if origin is list:
        (item,) = typing.get_args(kind)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin is dict:
        key, item = typing.get_args(kind)
        return isinstance(value, dict) and all(
            _fits(k, key) and _fits(v, item) for k, v in value.items())
    return False


def parse_job(data: Any) -> AnyJob:
    """The typed job of a job frame; LensError("bad-request") naming what is wrong.

    Unknown fields (and `id`) are ignored, so an older worker reads a newer engine's jobs.
    """
    if not isinstance(data, dict):
        raise _bad("a job must be a JSON object")
    op = data.get("op")
    cls = JOB_TYPES.get(op) if isinstance(op, str) else None
    if cls is None:
        raise _bad(f"unknown job op {op!r}")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data or (data[f.name] is None and not _fits(None, hints[f.name])):
            required = (f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING)
            if required:
                raise _bad(f"the job has no {f.name!r}")
            continue
        value = data[f.name]
        if f.name == "targets" and isinstance(value, str):
            value = [value]  # one target may be sent bare
        if not _fits(value, hints[f.name]):
            raise _bad(f"{f.name!r} of a {op} job cannot be {value!r}")
        values[f.name] = float(value) if hints[f.name] in (float, float | None) and (
            value is not None) else value
    job = typing.cast(AnyJob, cls(**values))
    if isinstance(job, ModuleJob):
        if not job.path or not job.module:
            raise _bad("the job's 'path' and 'module' must not be empty")
        if job.construct not in CONSTRUCT_POLICIES:
            raise _bad(f"'construct' must be one of {', '.join(CONSTRUCT_POLICIES)}")
        if job.via not in VIAS:
            raise _bad(f"'via' must be one of {', '.join(VIAS)}")
        if any(size < 1 for size in job.dims.values()):
            raise _bad("'dims' sizes must be at least 1")
        job.path = os.path.abspath(job.path)
    elif isinstance(job, ModulesJob):
        if not job.path:
            raise _bad("the job has no 'path'")
        job.path = os.path.abspath(job.path)
    return job

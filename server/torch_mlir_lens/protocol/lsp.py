"""The custom LSP requests and notifications of Torch-MLIR Lens, typed.

attrs classes with snake_case fields; lsprotocol's converter (`lsp/wire/json_rpc.py` registers
`REQUESTS` and `NOTIFICATIONS` with it) writes and reads them camelCase on the wire, as it does
for the standard LSP types. `client/src/protocol.ts` declares the same shapes for the client;
`tests/test_protocol_agreement.py` fails when the two drift apart. Lines in results are 1-based,
LSP positions (`Position`, `Range`) 0-based. Fields without a default are always sent (null
when empty); fields with one may be absent.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
from lsprotocol.types import Position, Range

from torch_mlir_lens import defaults

LOWER = "torchMlirLens/lower"
MODULES = "torchMlirLens/modules"
VERIFY = "torchMlirLens/verify"
SERVER_INFO = "torchMlirLens/serverInfo"
GRAPH = "torchMlirLens/graph"
ONNX_MODEL = "torchMlirLens/onnxModel"
STATUS = "torchMlirLens/status"  # server → client
SET_TRUSTED = "torchMlirLens/setTrusted"  # client → server
MISSING_DEPENDENCY = "torchMlirLens/missingDependency"  # server → client

# Server commands (workspace/executeCommand; one argument object each).
EXPORT_MODULE = "torchMlirLens.exportModule"
EXPORT_REPRO = "torchMlirLens.exportRepro"
EXPLAIN_INPUTS = "torchMlirLens.explainInputs"
VERIFY_COMMAND = "torchMlirLens.verify"
EXPORT_CODE = "torchMlirLens.exportCode"
SET_TRUSTED_COMMAND = "torchMlirLens.setTrusted"  # as the notification, for any client
PROFILE = "torchMlirLens.profile"

ServerState = Literal["starting", "ready", "lowering", "error", "untrusted"]
InputsStatus = Literal["comment", "convention", "settings", "derived", "inferred", "missing"]
OnnxNodeState = Literal["ok", "rejected", "knock-on", "unknown"]


# --- torchMlirLens/lower ---------------------------------------------------------------------


@attrs.define
class LowerParams:
    """Which module (by name, or the one at `position`) to lower to which target/pipeline."""

    uri: str
    module: str | None = None
    position: Position | None = None
    target: str | None = None  # default: the `defaultTarget` setting
    pipeline: str | None = None  # a name from the `pipelines` setting, or a pipeline string
    print_after_all: bool = False
    work_done_token: int | str | None = None
    inline_blocks: bool | None = None  # repeated blocks inline; None: the stitchBlocks setting
    via: str | None = None  # "onnx": through torch.onnx.export and the ONNX importer


@attrs.define
class IrLineMapping:
    """IR line `ir_line` was made by source `uri:line`; depth 0 is the innermost user frame."""

    ir_line: int
    uri: str
    line: int
    depth: int
    cell: int | None = None  # a notebook cell's 1-based number (uri, line: in that cell)


@attrs.define
class FrameTable:
    """Call chains of the IR lines made inside library code (docs/contracts.md)."""

    files: list[str]  # URIs
    library: list[int]  # indices into files that are library code
    chains: list[list[int]]  # [file, line, file, line, ...] innermost first
    rows: list[tuple[int, int]]  # [irLine, chain index]


@attrs.define
class RelatedLocation:
    """A library line behind a finding made inside library code."""

    uri: str
    line: int
    message: str


@attrs.define
class KnockOn:
    """An op that fails only because of a diagnostic's cause."""

    op: str | None
    uri: str | None
    line: int | None


@attrs.define
class LensDiagnostic:
    """A finding of a lowering (one per cause and line)."""

    severity: str
    message: str
    kind: str
    uri: str | None
    line: int | None
    op: str | None
    target: str | None
    related: list[RelatedLocation]
    cause: str | None
    ops: list[str] | None
    knock_on: list[KnockOn] | None
    cell: int | None = None  # a notebook cell's 1-based number
    reason: str | None = None  # why the backend refuses the op, when known
    node: OnnxNodeRef | None = None  # in an `.onnx` file: the node (`line` is its index)


@attrs.define
class OnnxNodeRef:
    """A node of an ONNX graph: its 1-based position in the graph (a result's `line`), its
    name ("" when it has none), operator, domain ("" for ONNX's own) and opset."""

    index: int
    name: str
    op_type: str
    domain: str
    opset: int


@attrs.define
class PassIr:
    """The IR after one pass (`printAfterAll`)."""

    name: str
    ir: str


@attrs.define
class LowerError:
    """Why a lowering produced no IR at all."""

    kind: str
    message: str
    uri: str | None
    line: int | None
    cell: int | None = None


@attrs.define
class LowerResponse:
    """One module lowered to one target (or pipeline).

    A lowering that produced no IR at all answers `ok: false` with the error as its one
    diagnostic and as `error`; one superseded by a newer text answers the LSP error
    ContentModified. `partial`: `ir` is the target IR with each rejected op kept as a call.
    Diagnostics are one per cause and line (`cause`, `ops`, `knock_on`), `related` the library
    lines behind it. In a notebook, map, diagnostic and error entries in its cells carry the
    cell's URI, the line in the cell and `cell`. `stats` are the engine's counters with
    camelCase names (`ops`, `mappedOps`, `unmappedOpNames`, `irBytes`, ...), `timings` its
    phases in seconds (`load`, `export`, `lower`, `total`, ...): open-ended, so plain maps.
    """

    module: str
    target: str
    ok: bool
    ir: str
    map: list[IrLineMapping]
    diagnostics: list[LensDiagnostic]
    stats: dict[str, Any]
    timings: dict[str, float | str]  # a non-finite one as "inf"/"nan" (not JSON numbers)
    inputs_source: str | None  # how the inputs were found: "comment", "inferred", ...
    partial: bool  # ok is false, but `ir` is the target IR with rejects kept as calls
    frames: FrameTable | None = None  # absent when no op comes from library code
    passes: list[PassIr] | None = None  # with `printAfterAll` only
    error: LowerError | None = None  # a lowering that produced no IR at all
    rewrites: list[str] | None = None  # the rewrites it was lowered through, by name


# --- torchMlirLens/graph ---------------------------------------------------------------------


@attrs.define
class GraphParams:
    """The module whose graph to build, with verdicts at `targets` (default: the
    `diagnosticTargets` setting)."""

    uri: str
    module: str
    targets: list[str] | None = None


@attrs.define
class GraphResponse:
    """`graph`: the module's graph as `torch-mlir-lens graph --format json` writes it
    (`ModuleGraph.to_json()`, protocol/graph.py: nodes, edges, groups, verdicts, the Torch IR
    its nodes' `ir_lines` index), sent as it is (snake_case keys)."""

    graph: dict[str, Any]


# --- torchMlirLens/onnxModel ------------------------------------------------------------------


@attrs.define
class OnnxModelParams:
    """The `.onnx` file to show, with verdicts at `targets` (backends; default: the
    `diagnosticTargets` setting's backends, else all three)."""

    uri: str
    targets: list[str] | None = None


@attrs.define
class OnnxValueInfo:
    """A graph input or output: a dim is a size, a dynamic dim's name, or "?"."""

    name: str
    dtype: str
    dims: list[int | str]


@attrs.define
class OnnxNodeVerdict:
    """How one backend fares with one node: `ok`, `rejected` (it cannot lower the node),
    `knock-on` (it fails only because of a rejected node), `unknown` (the lowering failed as
    a whole); `why` in words."""

    target: str
    state: OnnxNodeState
    why: str | None


@attrs.define
class OnnxNodeRow:
    """One node as the model's view lists it: where it is (`index`: its 1-based position, the
    `line` of diagnostics and IR maps), what it is, the types of its operands and results as
    the imported IR has them (`f32[2,3]`, `none`), and its verdict per backend."""

    index: int
    name: str
    op_type: str
    domain: str
    opset: int
    inputs: list[str]
    outputs: list[str]
    verdicts: list[OnnxNodeVerdict]


@attrs.define
class OnnxTargetSummary:
    """One backend on the whole model: ok, partial (some nodes rejected), how many nodes it
    rejects, and why it failed when no node is to blame."""

    target: str
    ok: bool
    partial: bool
    rejected: int
    message: str | None


@attrs.define
class OnnxModelResponse:
    """`onnxModel`: the model's graph (name, opsets by domain, inputs, outputs, nodes) with
    each backend's verdict per node; `module` is what `lower` takes for its IR. A model that
    cannot be read or imported answers `error` (and no nodes)."""

    uri: str
    module: str
    graph: str
    opsets: dict[str, int]
    inputs: list[OnnxValueInfo]
    outputs: list[OnnxValueInfo]
    nodes: list[OnnxNodeRow]
    targets: list[OnnxTargetSummary]
    fixes: list[str]
    error: LowerError | None = None


# --- torchMlirLens/modules -------------------------------------------------------------------


@attrs.define
class ModulesParams:
    """The document whose modules to list (static: works untrusted)."""

    uri: str


@attrs.define
class ModuleInfo:
    """A module (nn.Module class or function) of the document."""

    name: str
    kind: Literal["class", "function"]
    range: Range
    selection_range: Range
    forward_range: Range | None
    inputs: InputsStatus
    parents: list[str]


@attrs.define
class ModulesResponse:
    """The document's modules, in source order."""

    modules: list[ModuleInfo]


# --- torchMlirLens/verify (request, and the command of the same name) -------------------------


@attrs.define
class VerifyParams:
    """The module to JIT and compare with eager PyTorch; tolerances optional."""

    uri: str
    module: str
    rtol: float | None = None
    atol: float | None = None
    target: str | None = None  # the backend whose IR runs (default Linalg; IREE: its runtime)


@attrs.define
class OutputComparison:
    """One output of the module, compiled against eager."""

    index: int
    shape: list[int]
    dtype: str
    max_abs_err: float | str  # "inf" / "nan" as strings: JSON has no such numbers
    max_rel_err: float | str
    worst_index: list[int]
    ok: bool
    rtol: float
    atol: float
    message: str


@attrs.define
class FileRelatedLocation:
    """A library line behind a finding, by file path."""

    file: str
    line: int
    message: str


@attrs.define
class FileKnockOn:
    """An op that fails only because of a finding's cause, by file path."""

    op: str | None
    file: str | None
    line: int | None


@attrs.define
class FileDiagnostic:
    """A finding as the CLI's `--json` gives it: located by file path, not URI."""

    severity: str
    message: str
    kind: str
    file: str | None
    line: int | None
    op: str | None
    target: str | None
    cause: str | None
    ops: list[str] | None
    knock_on: list[FileKnockOn] | None
    related: list[FileRelatedLocation] = attrs.Factory(list)  # absent when empty


@attrs.define
class Divergence:
    """The first user line whose eager and compiled values differ (by file path)."""

    file: str
    line: int
    shape: list[int]
    dtype: str
    max_abs_err: float | str  # "inf" / "nan" as strings: JSON has no such numbers
    worst_index: list[int]
    message: str


@attrs.define
class DimSize:
    """The size one dynamic dim had in a run, by the name the `dynamic=` comment gives it."""

    name: str
    size: int


@attrs.define
class VerifyAtSize:
    """One run of the compiled module at one size of its dynamic dims, against eager."""

    dims: list[DimSize]
    example: bool  # the example inputs' own sizes
    ok: bool
    message: str
    max_abs_err: float | str  # "inf" / "nan" as strings: JSON has no such numbers
    outputs: list[OutputComparison]


@attrs.define
class VerifyResponse:
    """The verdict: `ok` when every output matched within its tolerances.

    The worker's `VerifyResult.to_json()`, every field always sent. `kind` is null when ok;
    `rtol`/`atol` null: per-dtype defaults (each output says what it used); `timings` keys
    in seconds, camelCase (`lowerLlvm`, `jit`, `run`, `eager`, `compare`, `total`, ...).
    A module with dynamic dims runs at several sizes: `sizes` has one entry each, the
    example's first (`outputs` are its comparisons); empty for a module without any.
    """

    module: str
    ok: bool
    outputs: list[OutputComparison]
    rtol: float | None
    atol: float | None
    timings: dict[str, float | str]  # a non-finite one as "inf"/"nan" (not JSON numbers)
    diagnostics: list[FileDiagnostic]
    message: str
    kind: str | None
    max_abs_err: float | str  # "inf" / "nan" as strings: JSON has no such numbers
    divergence: Divergence | None  # on a mismatch, when a diverging line was found
    sizes: list[VerifyAtSize]
    speed: CompiledSpeed | None = None  # an IREE target's run: its time against eager's


@attrs.define
class CompiledSpeed:
    """An IREE target's compiled module timed against eager PyTorch on the same inputs and
    threads (Verify on IREE, a profile): milliseconds per call, best of `runs` batches."""

    target: str
    device: str
    compiled_ms: float | None
    eager_ms: float | None
    threads: int | None
    runs: int | None


@attrs.define
class StatusParams:
    """`torchMlirLens/status` (server → client): what the server is doing."""

    state: ServerState
    detail: str | None = None


# --- torchMlirLens/serverInfo ----------------------------------------------------------------


@attrs.define
class ServerInfoParams:
    """`wait_for_worker`: wait for a starting worker (default: when nothing runs)."""

    wait_for_worker: bool | None = None


@attrs.define
class ServerSettings:
    """The effective settings (`torchMlirLens.*` merged with the defaults and pyproject.toml)."""

    default_target: str
    lens_targets: list[str]
    diagnostics: str
    diagnostic_targets: list[str]
    timeout_seconds: float
    memory_limit_mb: int
    example_inputs: dict[str, str]  # keys are the user's names, sent as they are
    pipelines: dict[str, str]
    strict_export: bool
    cache_size_mb: int = defaults.CACHE_SIZE_MB
    iree_archs: dict[str, str] = attrs.Factory(dict)  # an IREE target → its architecture


@attrs.define
class EngineStats:
    """The engine's state and counters; the worker's are absent while it is busy."""

    restarts: int
    ready: bool
    busy: bool
    worker_pid: int | None
    early_pid: int | None  # the worker spawned before initialize, when there was one
    jobs_run: int | None = None
    exports_run: int | None = None
    cached_programs: int | None = None
    pid: int | None = None  # the worker's, as it reports itself
    cache_entries: int | None = None  # the engine's result cache
    cache_hits: int | None = None
    worker_busy: bool = False  # the worker did not answer in time: its counters are absent
    error: str | None = None  # why the worker could not answer
    # The persistent result cache in this server's process (None: off).
    persistent_hits: int | None = None
    persistent_misses: int | None = None
    persistent_stale: int | None = None  # entries found whose files or libraries changed
    persistent_writes: int | None = None


@attrs.define
class ServerInfoResponse:
    """The server's process, imports, trust, status, settings and engine counters."""

    pid: int
    version: str
    torch_imported: bool
    torch_mlir_imported: bool
    trusted: bool  # some folder (or the documents the client opens) is trusted
    trusted_folders: list[str]  # the trusted folders' real paths
    status: StatusParams  # as the last `torchMlirLens/status`
    settings: ServerSettings
    engine: EngineStats | None  # None: no engine (untrusted, not started)


# --- notifications -----------------------------------------------------------------------------


@attrs.define
class MissingDependencyParams:
    """`torchMlirLens/missingDependency` (server → client, once per missing extra): a target
    needs a package the server's interpreter lacks; `message` says what to install, `extra`
    is the package's extra that brings it (`torch-mlir-lens[iree]`)."""

    message: str
    extra: str
    packages: list[str]


@attrs.define
class SetTrustedParams:
    """`torchMlirLens/setTrusted` (client → server): the trust of `folders` (URIs), or of
    every workspace folder when omitted, changed."""

    trusted: bool
    folders: list[str] | None = None


# --- server commands ---------------------------------------------------------------------------


@attrs.define
class ModuleArgs:
    """The argument of `torchMlirLens.explainInputs`: a module of a document."""

    uri: str
    module: str


@attrs.define
class ExportModuleArgs:
    """`torchMlirLens.exportModule`: write the module's IR; never replaces unless asked.

    `output` (a path or `file:` URI; relative to the source file's folder) must be inside the
    workspace folders and end in .mlir/.mlirbc (.vmfb: an IREE target's compiled module, for
    the architecture of the `ireeArchs` setting; `bytecode` does not apply) unless
    `chosen_by_user`: the client sets it only for a path from its save dialog. Never a source
    file (`project/write_policy.py`).
    """

    uri: str
    module: str
    target: str | None = None
    output: str | None = None
    bytecode: bool = False
    overwrite: bool = False
    chosen_by_user: bool = False


@attrs.define
class ExportModuleResponse:
    """Where the IR was written."""

    path: str
    uri: str
    bytes: int | None
    left_out: str | None = None  # an IREE module compiled without weights: what was left out


@attrs.define
class ExportReproArgs:
    """`torchMlirLens.exportRepro`: write a reproducer (.mlir + torch-mlir-opt command).

    `output_dir` as an export's `output`: inside the workspace folders unless
    `chosen_by_user` (the client's folder dialog).
    """

    uri: str
    module: str
    target: str | None = None
    output_dir: str | None = None
    chosen_by_user: bool = False


@attrs.define
class ExportReproResponse:
    """The reproducer's files and command."""

    mlir_path: str
    mlir_uri: str
    command: str


@attrs.define
class ExportCodeArgs:
    """`torchMlirLens.exportCode`: Python that reproduces the module's IR at `target` with
    plain torch-mlir, the rewrites it lowers through inlined."""

    uri: str
    module: str
    target: str | None = None


@attrs.define
class ExportCodeResponse:
    """The code (the client copies it) and the rewrites it inlines."""

    code: str
    rewrites: list[str]


@attrs.define
class ProfileArgs:
    """`torchMlirLens.profile`: time the module compiled for an IREE target (only IREE CPU
    runs here) against eager, and each dispatch, mapped to its lines."""

    uri: str
    module: str
    target: str | None = None  # default: iree-cpu


@attrs.define
class LineCost:
    """A source line's share of the compiled module's dispatch time (`share` of 1)."""

    uri: str
    line: int
    ms: float
    share: float


@attrs.define
class ProfileResponse:
    """The profile: the compiled time beside eager's, each line's cost (heaviest first)."""

    module: str
    target: str
    speed: CompiledSpeed | None
    line_costs: list[LineCost]
    message: str | None  # why there is no profile (the module does not compile, ...)


@attrs.define
class SetTrustedResponse:
    """`torchMlirLens.setTrusted` (argument: `SetTrustedParams`): the trust now in effect."""

    trusted: bool


@attrs.define
class ExplainInputsResponse:
    """Where the module's example inputs come from, or how to give it some; the comment to
    paste (the one in effect when it has one); its inputs status (`ModuleInfo.inputs`:
    comment, convention, settings, derived, inferred, missing)."""

    message: str
    template: str
    inputs: str


# method → (params type, result type); None: a notification.
REQUESTS: dict[str, tuple[type, type]] = {
    LOWER: (LowerParams, LowerResponse),
    MODULES: (ModulesParams, ModulesResponse),
    VERIFY: (VerifyParams, VerifyResponse),
    SERVER_INFO: (ServerInfoParams, ServerInfoResponse),
    GRAPH: (GraphParams, GraphResponse),
    ONNX_MODEL: (OnnxModelParams, OnnxModelResponse),
}
NOTIFICATIONS: dict[str, type] = {
    STATUS: StatusParams,
    SET_TRUSTED: SetTrustedParams,
    MISSING_DEPENDENCY: MissingDependencyParams,
}
COMMANDS: dict[str, tuple[type, type]] = {
    EXPORT_MODULE: (ExportModuleArgs, ExportModuleResponse),
    EXPORT_REPRO: (ExportReproArgs, ExportReproResponse),
    EXPLAIN_INPUTS: (ModuleArgs, ExplainInputsResponse),
    VERIFY_COMMAND: (VerifyParams, VerifyResponse),
    EXPORT_CODE: (ExportCodeArgs, ExportCodeResponse),
    SET_TRUSTED_COMMAND: (SetTrustedParams, SetTrustedResponse),
    PROFILE: (ProfileArgs, ProfileResponse),
}

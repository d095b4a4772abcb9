"""Check modules on N isolated workers side by side; results in the plan's order.

Each of the N lanes owns an `Engine` (one worker process, its own time-out and memory limit):
a module that crashes, hangs or blows its memory fails alone, its lane gets a fresh worker and
goes on. One lowering job per module covers torch-mlir's targets, so the module is exported
once; each IREE target is a job of its own, with its own time-out (`target_jobs`). A lane prefers
the next module of the file it just did (the worker has that file loaded). A notebook's modules
run the same way; their outcomes are then given in cell lines. An ONNX model is one module, its
graph (`onnx_models`).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.engine.module_jobs import GivenInputs
from torch_mlir_lens.findings import Finding, make
from torch_mlir_lens.project.limits import usable_cpus
from torch_mlir_lens.protocol.results import LensError, LowerResult
from torch_mlir_lens.repo_check import onnx_models, target_jobs
from torch_mlir_lens.repo_check.plan import ModuleTask, Plan
from torch_mlir_lens.rules.iree_targets import is_iree_target
from torch_mlir_lens.system.reading import SYSTEM_FILE, read_text

MISSING_INPUTS_NOTE = ("no example inputs (add a '# torch-mlir-lens: inputs=(...)' comment "
                       "above the class)")


@dataclass
class RunOptions:
    """How to lower: targets, limits, inputs, lanes."""

    targets: list[str]
    jobs: int
    timeout_s: float
    memory_limit_mb: int
    root: str
    example_inputs: dict[str, str] = field(default_factory=dict)
    strict_export: bool = False
    require_inputs: bool = False
    cache_dir: str | None = None  # the persistent result cache (None: none)
    rewrites: list[str] = field(default_factory=list)  # `--rewrites` / the project's items
    prove_rewrites: bool = True  # say per finding whether a proven rewrite exists
    inline_blocks: bool = False  # repeated blocks inline, not one function each
    # The example inputs the command line named (`--inputs`...): the one module checked.
    given_inputs: GivenInputs | None = None
    iree_archs: dict[str, str] = field(default_factory=dict)  # IREE target → arch (not default)
    dims: dict[str, int] = field(default_factory=dict)  # ONNX models' dynamic dims
    # What the persistent cache did, summed over the lanes' engines once they stop.
    cache_hits: int = 0
    cache_lookups: int = 0
    # Repeated blocks the lanes' workers traced, and found traced by an earlier run or
    # another lane (the persistent cache's folder).
    blocks_traced: int = 0
    blocks_stored: int = 0


@dataclass
class ModuleOutcome:
    """The check of one module: the report entry (JSON) and its findings."""

    task: ModuleTask
    entry: dict[str, Any]
    findings: list[Finding]
    refusal: str | None = None  # an architecture IREE has no target for (the run's bad input)


def memory_available_mb() -> int | None:
    """MemAvailable from /proc/meminfo, or None where there is no such file."""
    try:
        for line in read_text("/proc/meminfo", SYSTEM_FILE).splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError):
        return None
    return None


def default_jobs(memory_limit_mb: int) -> tuple[int, str]:
    """CPU count, bounded so N workers at their memory limit fit in available memory."""
    cpus = usable_cpus()
    available = memory_available_mb()
    if available is None:
        return max(1, cpus), f"{cpus} CPUs"
    by_memory = max(1, available // max(1, memory_limit_mb))
    if by_memory < cpus:
        return by_memory, (f"{cpus} CPUs, but {available} MB available / {memory_limit_mb} MB "
                           "per worker")
    return cpus, f"{cpus} CPUs"


STATS_TIMEOUT_S = 10.0


async def _count_blocks(engine: Any, opts: RunOptions) -> None:
    """Add what the engine's worker did with repeated blocks (nothing when it never ran)."""
    if engine.worker_pid is None:
        return
    try:  # the worker is idle: it answers at once (bounded all the same: a count is a nicety)
        counters = (await asyncio.wait_for(engine.stats(), STATS_TIMEOUT_S)).worker
    except (LensError, TimeoutError):
        return
    opts.blocks_traced += counters.block_traces
    opts.blocks_stored += counters.block_disk_hits


async def _check_one(engine: Any, task: ModuleTask, text: str | None,
                     opts: RunOptions) -> ModuleOutcome:
    from torch_mlir_lens.engine import JobSettings, module_job

    model = onnx_models.is_model(task.path)
    entry: dict[str, Any] = {"file": task.rel, "name": task.name, "line": task.line or None,
                             "inputs": task.inputs, "targets": {}}
    if task.inputs == "missing":
        entry["skipped"] = MISSING_INPUTS_NOTE
        findings = []
        if opts.require_inputs:
            findings = [make.missing_inputs(f"{task.name}: {MISSING_INPUTS_NOTE}",
                                            module=task.name, module_file=task.rel,
                                            module_line=task.line, severity="error")]
        return ModuleOutcome(task, entry, findings)
    job = module_job(task.path, onnx_models.job_module(task.path, task.name), text=text,
                     workspace=opts.root,
                     settings=JobSettings(example_inputs=dict(opts.example_inputs),
                                          strict_export=opts.strict_export,
                                          rewrites=onnx_models.rewrites_for(task.path,
                                                                            opts.rewrites),
                                          inline_blocks=opts.inline_blocks),
                     given=opts.given_inputs, dims=opts.dims if model else None)
    started = time.perf_counter()
    module_line = task.line or None  # an ONNX model has none
    try:
        lowered = await target_jobs.lower_targets(engine, job, opts.targets, opts.iree_archs)
    except LensError as err:
        entry["error"] = {"kind": err.kind, "message": err.message, "line": err.line}
        entry["targets"] = {t: {"ok": False, "unsupported": [], "error": err.message}
                            for t in opts.targets}
        finding = make.of_error(err, module=task.name, module_file=task.rel,
                                module_line=module_line, place=_in_root(opts.root))
        entry["seconds"] = round(time.perf_counter() - started, 3)
        return ModuleOutcome(task, entry, [finding])
    results = lowered.results
    # The verdict per target is the single-file `check`'s: one meaning of "ok" everywhere.
    entry["targets"] = target_jobs.verdicts(opts.targets, lowered)
    # The errors gate (a backend's warnings and notes are the editor's).
    place = _in_root(opts.root)
    findings = [f for f in make.of_results(results, module=task.name, module_file=task.rel,
                                           module_line=module_line, place=place)
                if f.severity == "error"]
    findings += [make.of_error(err, module=task.name, module_file=task.rel,
                               module_line=module_line, place=place, target=target)
                 for target, err in lowered.failed.items()]
    await _with_rewrites(engine, job, results, entry, findings, opts, task, text)
    entry["seconds"] = round(time.perf_counter() - started, 3)
    return ModuleOutcome(task, entry, findings, target_jobs.refusal(results))


PROVEN_PAST_EXPORT = "a proven way past it"  # how the worker offers a pin (pin_proof.py)


async def _with_rewrites(engine: Any, job: Any, results: list[LowerResult],
                         entry: dict[str, Any], findings: list[Finding], opts: RunOptions,
                         task: ModuleTask, text: str | None) -> None:
    """The rewrites each target went through, and each culprit's proven rewrite (a proof
    that cannot run leaves the findings as they are: it only adds to them). The IREE targets
    have no rewrites of their own (they compile the Linalg IR), an ONNX model no `rewrites`
    job (its proven opset fix is in its findings' words: `onnx_models`)."""
    from torch_mlir_lens.repo_check.rewrite_findings import add_used, prove_rewrites

    add_used(entry, results)
    if not opts.prove_rewrites or onnx_models.is_model(task.path):
        return
    # Culprits, and export refusals the lowering found a proven way past (a pin): the
    # `rewrites` job gives each its fix (the comment line, SARIF's `fixes`).
    past_export = any(f.kind == "export-error" and PROVEN_PAST_EXPORT in f.message
                      for f in findings)  # one finding for every target
    failing = [r.target for r in results if not is_iree_target(r.target) and (
        past_export or any(f.target == r.target and f.op for f in findings))]
    notebook = task.path.endswith(".ipynb")
    await prove_rewrites(engine, job, failing, entry, findings, None if notebook else text,
                         task.path, task.name)


def _in_root(root: str) -> Callable[[str], str]:
    """The worker's absolute paths as a report's: relative to the project root."""
    from torch_mlir_lens.repo_check.paths import rel_path

    return lambda path: rel_path(path, root)


def _next_task(pending: list[ModuleTask], last_path: str | None) -> ModuleTask:
    if last_path is not None:
        for i, task in enumerate(pending):
            if task.path == last_path:
                return pending.pop(i)
    return pending.pop(0)


def _in_cells(outcome: ModuleOutcome, plan: Plan) -> ModuleOutcome:
    """A notebook module's outcome with its lines as cell lines (others: as they are)."""
    source = plan.notebooks.get(outcome.task.path)
    if source is None:
        return outcome
    from torch_mlir_lens.repo_check.notebook_modules import relocate_entry, relocate_finding

    rel = outcome.task.rel
    for f in outcome.findings:
        relocate_finding(f, rel, source.program)
    return ModuleOutcome(outcome.task, relocate_entry(outcome.entry, rel, source.program),
                         outcome.findings)


async def run_modules(
    tasks: list[ModuleTask], plan: Plan, opts: RunOptions,
    on_done: Callable[[ModuleOutcome], None] | None = None,
) -> list[ModuleOutcome]:
    """Check every task (of `plan`) on `opts.jobs` lanes; outcomes in the order of `tasks`."""
    from torch_mlir_lens.engine import Engine, EngineConfig

    order = {id(t): i for i, t in enumerate(tasks)}
    outcomes: list[ModuleOutcome | None] = [None] * len(tasks)
    pending = list(tasks)
    need_worker = [t for t in tasks if t.inputs != "missing"]
    lanes = max(1, min(opts.jobs, len(need_worker)))

    async def lane() -> None:
        engine: Any = None
        last: str | None = None
        try:
            while pending:
                task = _next_task(pending, last)
                last = task.path
                if engine is None and task.inputs != "missing":
                    engine = Engine(EngineConfig(python=sys.executable, timeout_s=opts.timeout_s,
                                                 memory_limit_mb=opts.memory_limit_mb,
                                                 cache_dir=opts.cache_dir))
                    # Not started: its worker spawns at the first job the persistent cache
                    # cannot answer (a fully cached run starts none).
                try:
                    outcome = await _check_one(engine, task, plan.text_of(task), opts)
                except Exception as exc:  # a bug of ours: this module fails, the rest go on
                    message = f"internal error: {type(exc).__name__}: {exc}"
                    outcome = ModuleOutcome(task, {
                        "file": task.rel, "name": task.name, "line": task.line,
                        "inputs": task.inputs, "targets": {},
                        "error": {"kind": "internal-error", "message": message, "line": None}},
                        [make.of_error(LensError("internal-error", message), module=task.name,
                                       module_file=task.rel, module_line=task.line)])
                outcome = _in_cells(outcome, plan)
                outcomes[order[id(task)]] = outcome
                if outcome.refusal:  # every module would say it: the run stops here
                    pending.clear()
                if on_done is not None:
                    on_done(outcome)
            if engine is not None:  # every module checked (a signal skips this)
                await _count_blocks(engine, opts)
        finally:
            if engine is not None:
                await engine.stop()
                stats = engine.persistent_stats
                if stats is not None:
                    opts.cache_hits += stats.hits
                    opts.cache_lookups += stats.hits + stats.misses

    await asyncio.gather(*(lane() for _ in range(lanes)))
    return [o for o in outcomes if o is not None]

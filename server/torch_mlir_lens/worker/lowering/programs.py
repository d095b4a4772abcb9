"""The worker's central pipeline: a job's module as an exported program, ready for any target.

    program_for(request) → Program: held, else load → inputs → construct → export

The export is the expensive step (torch.export and the FX import): the last
`MAX_CACHED_PROGRAMS` programs are held, keyed by everything that decides them (file text,
module, inputs, strict, construction policy; `protocol.programs.program_key`), so several
targets and several jobs on one module export once. A held program is used again only while
the other user files its export read are unchanged and no file of a name its imports missed
has appeared (provenance.py). A program pushed out is freed after the reply is written
(`release_evicted`): freeing an MLIR context and a module's weights takes milliseconds
nobody should wait for.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.jobs import ModuleJob
from torch_mlir_lens.protocol.programs import program_key
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.system.disk_cache import shadowed
from torch_mlir_lens.worker.loading.job_fields import read_text
from torch_mlir_lens.worker.loading.provenance import provenance
from torch_mlir_lens.worker.process import WORKER

MAX_CACHED_PROGRAMS = 4  # each holds a module's weights: keep few


@dataclass
class Program:
    """An exported program, ready to lower to any target."""

    lowerer: Any  # worker.lowering.ProgramLowerer
    inputs_source: str | None
    timings: dict[str, float] = field(default_factory=dict)
    fn: Any = None  # the module instance (or function) that was exported: verify runs it
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    user_files: list[str] = field(default_factory=list)
    construction: dict[str, Any] = field(default_factory=dict)  # construct.Construction.stats()
    # The modules its job loaded by path (its file, a parent giving it inputs): a later job
    # lowering this program depends on them too (provenance.py).
    loaded: frozenset[str] = frozenset()
    # The other user files its export read, with their digests: reused only while they hold
    # (a module imported from another folder, edited and saved).
    read: dict[str, str] = field(default_factory=dict)
    # The names its imports looked for in vain in the user's folders before finding them
    # elsewhere: reused only while no file of those names appeared there (a shadowing package).
    absent: dict[str, list[str]] = field(default_factory=dict)
    dynamic_shapes: Any = None  # the spec it was exported with: Verify names its dims
    variants: Any = None  # rewrite_jobs.variants.Variants: its lowerers with rewrites


@dataclass
class ProgramRequest:
    """What a job's program is built for, beyond the job itself.

    `need_weights` names what needs real weight values (None: a program built without them
    serves, construct.py); `keep` False is a proof of rewrites in the background, whose
    program is not held (it must push out none of those the lowerings use) and whose exports
    are counted apart; `pinned` are the tensors exported pinned (`pin.<name>` rewrites);
    `specialize` exports it specialised to the example (`export.specialize`);
    `why_inline` says why the blocks are not traced apart ("" when they may be).
    """

    job: ModuleJob
    need_weights: str | None = None
    keep: bool = True
    pinned: list[str] = field(default_factory=list)
    why_inline: str = ""
    specialize: bool = False

    def weights_needed(self) -> str | None:
        """What needs real weight values (pinned tensors do: pinned at export; a specialised
        export runs the forward on the example), or None."""
        return self.need_weights or ("pinned tensors" if self.pinned else None) or (
            "a specialised export" if self.specialize else None)


@dataclass
class _Programs:
    """The programs held, those pushed out and not yet freed, and the counts (the worker's
    part)."""

    evicted: list[Program] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=lambda: {
        "jobs_run": 0, "exports_run": 0, "proof_jobs": 0, "proof_exports": 0})
    held: BoundedCache[str, Program] = field(init=False)

    def __post_init__(self) -> None:
        self.held = BoundedCache(MAX_CACHED_PROGRAMS,
                                 on_evict=lambda _key, program: self.evicted.append(program))


def _programs() -> _Programs:
    return WORKER.part(_Programs)


def count(stat: str) -> None:
    """One more of `stat` ("jobs_run", "proof_jobs"; the exports are counted here)."""
    _programs().stats[stat] += 1


def stats() -> dict[str, int]:
    """The jobs and exports run, and how many programs are held."""
    programs = _programs()
    return {**programs.stats, "cached_programs": len(programs.held)}


def held_programs() -> list[str]:
    """The keys (`protocol.programs.program_key`) of the exported programs held, oldest first.

    Sent in every reply, so the engine knows which jobs only lower and need no export.
    """
    return list(dict.fromkeys(key.rpartition(":")[0] for key in _programs().held))


def forget_programs() -> None:
    """Drop every exported program held, as a new worker has none (the traced blocks are
    `blocks.block_cache`'s to forget)."""
    programs = _programs()
    programs.evicted.extend(programs.held.values())
    programs.held.clear()
    release_evicted()


def release_evicted() -> None:
    """Free the programs the cache let go of (the worker calls this after each reply)."""
    _programs().evicted.clear()


def program_for(request: ProgramRequest) -> Program:
    """The exported program of the request's module: held, else load → inputs → export.

    A program with real weights serves every job, one without only those that elide them.
    """

    job = request.job
    text = job.text if job.text is not None else read_text(job.path)
    fields = job.module_fields().to_json()
    if request.why_inline:
        fields["inline_blocks"] = True
    base = program_key(fields, text)
    real_key, any_key = f"{base}:real", f"{base}:{job.construct}"
    held = _held([real_key] if request.weights_needed() else [any_key, real_key])
    if held is not None:
        return held
    program, built_real = _Export(request, text).run()
    if request.keep:
        _programs().held.put(real_key if built_real else any_key, program)
    return program


def _held(keys: list[str]) -> Program | None:
    """The first program held under `keys` whose files still hold; one whose do not goes."""
    programs = _programs()
    for key in keys:
        cached = programs.held.get(key)
        if cached is None:
            continue
        from torch_mlir_lens.worker.loading import file_states

        if file_states.unchanged(cached.read) and not shadowed(cached.absent):
            return cached
        programs.evicted.append(cached)  # a file it read changed: export again
        programs.held.pop(key)
    return None


class _Export:
    """One build of a program: the module loaded, its inputs resolved, then constructed and
    exported (construct.py decides with or without weights and calls back `build_real` and
    `export`)."""

    def __init__(self, request: ProgramRequest, text: str) -> None:
        self.request = request
        self.job = request.job
        self.text = text
        self.timings: dict[str, float] = {}
        self.blocks_stats: dict[str, Any] = {}

    def run(self) -> tuple[Program, bool]:
        """The program, and whether it was built with real weights."""
        from torch_mlir_lens.worker import inputs, lowering
        from torch_mlir_lens.worker.loading import construct, loader

        job, request = self.job, self.request
        start = time.perf_counter()
        self.mod = loader.load_definitions(job.path, self.text)
        self.timings["load"] = time.perf_counter() - start

        start = time.perf_counter()
        need_weights = request.weights_needed()
        shapes_only = None if need_weights or job.construct == construct.REAL else job.construct
        with inputs.recording_without_weights(shapes_only):
            self.resolved = inputs.resolve_inputs(
                self.mod, job.module, path=job.path, text=self.text,
                inputs_expr=job.inputs, inputs_file=job.inputs_file,
                init_expr=job.init, settings_inputs=job.settings_inputs,
                workspace=job.workspace,
            )
        self.timings["inputs"] = time.perf_counter() - start

        self.user_files = loader.user_files_for(job.path)
        start = time.perf_counter()
        exported, built = construct.construct_and_export(
            inputs.lookup(self.mod, job.module), self.resolved, build_real=self.build_real,
            export=self.export, need_weights=need_weights, policy=job.construct)
        lowerer = lowering.ProgramLowerer(exported, module_name=job.module,
                                          user_files=self.user_files)
        self.timings["export"] = time.perf_counter() - start

        resolved = self.resolved
        program = Program(lowerer=lowerer, inputs_source=resolved.source, timings=self.timings,
                          fn=built.fn, args=tuple(resolved.args),
                          kwargs=dict(resolved.kwargs or {}), user_files=self.user_files,
                          construction={**built.stats(), **self.blocks_stats},
                          dynamic_shapes=resolved.dynamic_shapes, loaded=loader.touched())
        read = provenance(job.path, program.loaded, libraries=False)
        program.read, program.absent = read["files"], read["absent"]
        return program, built.path == construct.REAL

    def build_real(self) -> Any:
        """The module with its real weights (never a weightless instance given as inputs)."""
        from torch_mlir_lens.worker import inputs
        from torch_mlir_lens.worker.loading import construct

        given = self.resolved.instance
        if given is not None and construct.is_fake_module(given):
            self.resolved.instance = None
        return inputs.instantiate(self.mod, self.job.module, self.resolved)

    def export(self, fn: Any) -> Any:
        """`fn` exported: its repeated blocks traced apart (blocks/) unless inlined."""
        from torch_mlir_lens.worker import blocks

        count("exports_run" if self.request.keep else "proof_exports")
        program, outcome = blocks.export(fn, self.resolved, lambda: self._inline(fn), self.job,
                                         self.user_files, self.text,
                                         why_inline=self.request.why_inline)
        self.blocks_stats = dict(outcome.stats())
        return program

    def _inline(self, fn: Any) -> Any:
        """`fn` exported whole by torch.export, its pinned tensors pinned (specialised to the
        example when asked)."""
        from torch_mlir_lens.worker import lowering
        from torch_mlir_lens.worker.rewrites.pins import pinned as pinned_in

        resolved, pinned = self.resolved, self.request.pinned
        with pinned_in(fn, pinned) if pinned else contextlib.nullcontext():
            return lowering.export_program(
                fn, resolved.args, resolved.kwargs, user_files=self.user_files,
                strict=self.job.strict, dynamic_shapes=resolved.dynamic_shapes,
                dynamic_at=resolved.dynamic_at, specialize=self.request.specialize,
            )


__all__ = ["MAX_CACHED_PROGRAMS", "Program", "ProgramRequest", "count", "forget_programs",
           "held_programs", "program_for", "release_evicted", "stats"]

"""`run_job(job) -> reply`: the worker's one entry point, data in and data out.

A job is a JSON-ready dict (docs/contracts.md, "Worker jobs"); the reply is
`{"id", "ok": True, "result"}` or `{"id", "ok": False, "error": LensError json}`. Nothing here
talks to a pipe, so the same function runs in the worker process and in tests in-process.

Each handler asks `lowering/programs.py` for the job's exported program (held there, so several
targets and several jobs on one module export once) and hands it to the layer doing the job:
lowering, verify, rewrite proofs, IREE, the graph view. An `.onnx` file's jobs are
worker/onnx/jobs.py's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from torch_mlir_lens.protocol.jobs import (
    ExportCodeJob,
    ExportJob,
    ExportReply,
    GraphJob,
    Job,
    LowerJob,
    ModuleJob,
    ModulesJob,
    Reply,
    ReproJob,
    RewritesJob,
    VerifyJob,
    parse_job,
)
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.protocol.rewrite_results import SPECIALIZE, at_export
from torch_mlir_lens.rules.iree_targets import is_iree_target
from torch_mlir_lens.rules.targets import CUSTOM_TARGET, is_known_target
from torch_mlir_lens.source.onnx_files import is_onnx
from torch_mlir_lens.worker.loading.job_fields import read_text
from torch_mlir_lens.worker.loading.provenance import provenance
from torch_mlir_lens.worker.lowering import programs
from torch_mlir_lens.worker.lowering.programs import Program, ProgramRequest


def run_job(data: dict[str, Any]) -> dict[str, Any]:
    """Run one job frame (`protocol.jobs`) and return its reply's JSON; never raises."""
    return run(data).to_json()


def run(data: dict[str, Any]) -> Reply:
    """Run one job frame and return its reply; never raises."""
    job_id = data.get("id") if isinstance(data, dict) else None
    job_id = job_id if isinstance(job_id, int) else None
    try:
        job = parse_job(data)
        if not isinstance(job, ModuleJob | ModulesJob):
            return Reply(job_id, True, _HANDLERS[job.op](job), programs=programs.held_programs())
        # A proof of rewrites runs in the background after checks: counted apart from the
        # jobs that lower (whose count says how much an edit cost).
        programs.count("proof_jobs" if isinstance(job, RewritesJob) else "jobs_run")
        _begin_job()
        programs.release_evicted()  # when run in-process, nobody called it after the last job
        try:
            with _restored_process_state():
                _add_import_root(job)
                result = _handler(job)(job)
        finally:
            _end_job()
        return Reply(job_id, True, result, programs=programs.held_programs())
    except LensError as exc:
        if exc.kind != ErrorKind.MEMORY_LIMIT and _out_of_memory(exc):
            # A lower layer wrapped the allocation failure (e.g. "constructing X failed").
            exc = LensError(ErrorKind.MEMORY_LIMIT, f"out of memory: {exc.message}",
                            file=exc.file, line=exc.line)
        exc.depends = _files_read(job_path(data))  # a fix in one of them ends the failure
        return Reply(job_id, False, error=exc.to_json(), programs=programs.held_programs())
    except BaseException as exc:  # the user's code can raise anything, even SystemExit
        return Reply(job_id, False, error=_unexpected(exc).to_json(),
                     programs=programs.held_programs())


def _handler(job: ModuleJob | ModulesJob) -> Callable[[Any], dict[str, Any]]:
    """The job's handler: an `.onnx` file's are worker/onnx/jobs.py's."""
    if isinstance(job, ModuleJob) and is_onnx(job.path):
        try:
            from torch_mlir_lens.worker.onnx.jobs import handler
        except ImportError as exc:  # the `onnx` extra is not installed
            raise LensError(ErrorKind.LOAD_ERROR, f"an ONNX model needs the {exc.name} package:"
                            " pip install 'torch-mlir-lens[onnx]'", file=job.path) from exc
        return handler(job.op)
    return _HANDLERS[job.op]


def job_path(data: Any) -> str | None:
    """The file a job frame names, if any."""
    path = data.get("path") if isinstance(data, dict) else None
    return path if isinstance(path, str) else None


def _files_read(path: str | None) -> list[str]:
    """The other user files a job of `path` read (provenance.py); [] when unknown."""
    if not path:
        return []
    try:
        return sorted(provenance(path).get("files", {}))
    except Exception:  # what a failed job read is a nicety: never a second failure
        return []


def _begin_job() -> None:
    """What this job loads and imports is what its answer depends on (provenance.py)."""
    from torch_mlir_lens.worker.loading import import_graph, loader

    loader.begin_job()
    import_graph.begin_job()


def _end_job() -> None:
    """Stamp the user's modules this job imported (also lazily, while tracing): an edit to
    one of them is then seen by the next job, which imports it afresh (loader.py)."""
    from torch_mlir_lens.worker.loading import loader

    loader.stamp_imported_modules()


def _out_of_memory(exc: BaseException) -> bool:
    """True when exc is, or was caused by, an allocation failure (the RLIMIT_AS backstop)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError) or "can't allocate memory" in str(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _unexpected(exc: BaseException) -> LensError:
    """A LensError for an exception no lower layer classified."""
    text = str(exc)
    if isinstance(exc, MemoryError) or "can't allocate memory" in text:
        return LensError(ErrorKind.MEMORY_LIMIT, f"out of memory: {text.splitlines()[0][:300]}"
                         if text else "out of memory")
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return LensError(ErrorKind.LOWERING_ERROR, f"{type(exc).__name__}: {text}{where}")


def _add_import_root(job: Job) -> None:
    """The job's workspace folder goes on sys.path for this job (restored after it).

    The worker starts with nothing of any workspace importable (`-P`, a neutral working
    directory): a workspace's packages (`from mypkg.layers import Block` in a file below the
    root) resolve only inside a job, which the server sends only for a trusted folder. The
    loader puts the file's own folder before it, as `python file.py` would.
    """
    workspace = getattr(job, "workspace", None)
    if workspace and os.path.isdir(workspace) and workspace not in sys.path:
        sys.path.insert(0, workspace)


@contextlib.contextmanager
def _restored_process_state() -> Iterator[None]:
    """Undo what user code commonly changes in the process: cwd, sys.path, std streams."""
    cwd = os.getcwd()
    path = list(sys.path)
    streams = (sys.stdout, sys.stderr, sys.stdin)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.chdir(cwd)
        sys.path[:] = path
        sys.stdout, sys.stderr, sys.stdin = streams


# --- module jobs -----------------------------------------------------------------------------


def _program(job: ModuleJob, need_weights: str | None = None, *, keep: bool = True) -> Program:
    """The exported program of the job's module (lowering/programs.py), with what the job's
    rewrites ask of it.

    `keep` False (a proof of rewrites, in the background): a program it has to build is not
    held. Rewrites decompose the program torch.export made whole (rewrites/apply.py), which a
    stitched program has not: a proof, or a module asking for rewrites, has an inline program
    of its own, never the stitched one a plain lowering keeps.
    """
    text = job.text if job.text is not None else read_text(job.path)
    why_inline = ("inline: proving rewrites" if not keep
                  else "inline: rewrites asked for" if _asks_rewrites(job, text) else "")
    return programs.program_for(ProgramRequest(
        job, need_weights, keep=keep, pinned=_pins(job, text), why_inline=why_inline,
        specialize=SPECIALIZE in _at_export(job, text)))


def _lower_options(job: LowerJob | None) -> Any:
    from torch_mlir_lens.worker.lowering import LowerOptions

    job = job or LowerJob(path="", module="")  # export: the defaults
    wanted = {
        "keep_weights": job.keep_weights,
        "debug_info": job.debug_info,
        "print_after_all": job.print_after_all,
        "list_unsupported": job.list_unsupported,
    }
    # Pass only the options this LowerOptions knows, so the two sides can evolve apart.
    known = getattr(LowerOptions, "__dataclass_fields__", wanted)
    return LowerOptions(**{k: v for k, v in wanted.items() if k in known})


def _job_targets(job: LowerJob) -> list[tuple[str, str | None]]:
    """[(target name, custom pipeline or None)] in the order the job asked for them."""
    pipeline = job.pipeline
    wanted: list[tuple[str, str | None]] = []
    for target in job.targets:
        if not is_known_target(target):
            raise LensError(ErrorKind.BAD_REQUEST, f"unknown target {target!r}")
        wanted.append((target, None))
    if pipeline and pipeline.strip():
        wanted.append((CUSTOM_TARGET, pipeline))
    if not wanted:
        raise LensError(ErrorKind.BAD_REQUEST, "the job names no target and no pipeline")
    return wanted


def _failed_results(job: LowerJob, err: LensError) -> dict[str, Any]:
    """One failed LowerResult per target, carrying the export error at its line."""
    results = []
    for target, _ in _job_targets(job):
        res = LowerResult(module=job.module, target=target, ok=False,
                          diagnostics=[err.to_diagnostic(target)])
        results.append(res.to_json())
    return {"results": results, "provenance": provenance(job.path)}


def _weights_needed(options: Any, wanted: list[tuple[str, str | None]]) -> str | None:
    """What in a lower job needs real weight values, or None (they are elided)."""
    if options.keep_weights:
        return "--keep-weights"
    return None


def _asks_rewrites(job: ModuleJob, text: str) -> bool:
    """Whether the job's module is lowered through any rewrite (its comment's or the job's);
    a comment the rules cannot read says no here and is reported by `_rewriting`."""
    from torch_mlir_lens.worker.rewrite_jobs.variants import requested

    try:
        return bool(requested(job.path, text, job.module, job.rewrites))
    except LensError:
        return False


def _pins(job: ModuleJob, text: str) -> list[str]:
    """The tensors the job's module is exported with pinned (`pin.<name>` rewrites)."""
    from torch_mlir_lens.worker.rewrites.pins import pin_names

    return pin_names(_at_export(job, text))


def _at_export(job: ModuleJob, text: str) -> list[str]:
    """The rewrites the job's module is exported with (`pin.<name>`, `export.specialize`),
    as a result names them: they act at export, for every target."""
    from torch_mlir_lens.worker.rewrite_jobs.variants import requested

    try:
        names = [s.name for s in requested(job.path, text, job.module, job.rewrites)]
    except LensError:
        return []  # reported by `_rewriting`
    return list(dict.fromkeys(n for n in names if at_export(n)))


EXPORT_OP = "torch.export"  # the "op" of an export refusal's offer (rewrites job, check)


def _export_fix_proof(job: ModuleJob, err: LensError) -> Any:
    """The proof of the way past the module's export refusal, or None when none fits: the pin
    (a branch on the module's one-element tensor: rewrite_jobs/pin_proof.py), the narrower
    fix, first; else the export specialised to the example (a data-dependent refusal:
    rewrite_jobs/specialize_proof.py). A refused pin's proof when neither is proven."""
    from torch_mlir_lens.worker.rewrite_jobs.pin_proof import prove_pin
    from torch_mlir_lens.worker.rewrite_jobs.specialize_proof import prove_specialization

    name = getattr(err, "pin_candidate", None)
    pin = None
    if name and f"pin.{name}" not in job.rewrites:
        pin = _proven_on_module(job, lambda fn, args, kwargs, files: prove_pin(
            fn, args, kwargs, name, user_files=files, module_name=job.module))
        if pin is not None and pin.ok:
            return pin
    if not getattr(err, "specialize_candidate", False) or SPECIALIZE in job.rewrites:
        return pin
    specialised = _proven_on_module(job, lambda fn, args, kwargs, files: prove_specialization(
        fn, args, kwargs, user_files=files, module_name=job.module))
    return specialised if specialised is not None else pin


def _proven_on_module(job: ModuleJob, prove: Callable[..., Any]) -> Any:
    """`prove(fn, args, kwargs, user_files)` on a fresh instance of the job's module (the
    cached program's instance may have been exported with something pinned), or None when
    the module cannot be built for it."""
    from torch_mlir_lens.worker import inputs as inputs_mod
    from torch_mlir_lens.worker.loading import loader

    text = job.text if job.text is not None else read_text(job.path)
    try:
        mod = loader.load_definitions(job.path, text)
        resolved = inputs_mod.resolve_inputs(
            mod, job.module, path=job.path, text=text, inputs_expr=job.inputs,
            inputs_file=job.inputs_file, init_expr=job.init,
            settings_inputs=job.settings_inputs, workspace=job.workspace)
        fn = inputs_mod.instantiate(mod, job.module, resolved)
        return prove(fn, tuple(resolved.args), dict(resolved.kwargs or {}),
                     loader.user_files_for(job.path))
    except Exception:  # the proof is an offer: without it the refusal stands as it is
        return None


def _past_export_refusal(job: LowerJob, err: LensError) -> dict[str, Any] | None:
    """An export refused for a data-dependent reason: the pin (a branch on the module's
    one-element tensor) or the export specialised to the example, proven, is lowered through
    under `--rewrites auto` (the results), else offered in the error's message (None)."""
    proof = _export_fix_proof(job, err)
    if proof is None or not proof.ok:
        return None
    if "auto" in job.rewrites:
        return _lower(dataclasses.replace(job, rewrites=[*job.rewrites, proof.rewrite]))
    first, _, rest = err.message.partition("\n")
    err.message = "\n".join([first, proof.offer()] + ([rest] if rest else []))
    return None


def _rewriting(job: ModuleJob, program: Program) -> Any:
    """The rewrites the job's module asks for (its comment, the job's), on this program."""
    from torch_mlir_lens.worker.rewrite_jobs.rewriting import Rewriting
    from torch_mlir_lens.worker.rewrite_jobs.variants import Variants, requested

    text = job.text if job.text is not None else read_text(job.path)
    if program.variants is None:
        program.variants = Variants(program.lowerer)
    specs = requested(job.path, text, job.module, job.rewrites)
    return Rewriting(program.variants, program.fn, program.args, program.kwargs, specs)


def _lower(job: LowerJob) -> dict[str, Any]:
    wanted = _job_targets(job)
    options = _lower_options(job)
    if job.via == "onnx":  # through torch.onnx.export and the ONNX importer
        from torch_mlir_lens.worker.onnx.via_onnx import lower_via_onnx

        program = _program(job, "--via onnx")  # torch.onnx.export runs the real module
        return {**lower_via_onnx(job, program.fn, program.args, program.kwargs,
                                 program.user_files, options),
                "provenance": provenance(job.path, program.loaded)}
    try:
        program = _program(job, _weights_needed(options, wanted) or (
            "--rewrites auto" if "auto" in job.rewrites else None))
        rewriting = _rewriting(job, program)
    except LensError as err:
        # An export failure is a result (the module does not export, here is why and where);
        # bad requests, load and input errors stay errors.
        if err.kind == ErrorKind.EXPORT_ERROR:
            return _past_export_refusal(job, err) or _failed_results(job, err)
        raise
    results = []
    rewriting_text = job.text if job.text is not None else read_text(job.path)
    first_timings = dict(program.timings)
    program.timings = {}  # a later job reusing the program did not pay for it
    for target, pipeline in wanted:
        try:
            lowerer, used = rewriting.lowerer(_lowered_as(target))
        except LensError as err:  # a rewrite that cannot be applied to this program
            if err.kind != ErrorKind.EXPORT_ERROR:
                raise
            results.append(LowerResult(module=job.module, target=target, ok=False,
                                       diagnostics=[err.to_diagnostic(target)]).to_json())
            continue
        res: LowerResult = _iree_lower(job, program, lowerer, target, options) \
            if is_iree_target(target) else lowerer.lower(target, pipeline=pipeline,
                                                         options=options)
        res.rewrites = [*_at_export(job, rewriting_text), *used]
        res.inputs_source = res.inputs_source or program.inputs_source
        res.stats = {**res.stats, **program.construction}
        for name, seconds in first_timings.items():
            res.timings.setdefault(name, seconds)
        first_timings = {}  # only the first result carries the shared steps
        results.append(res.to_json(compact_map=True))
    # What else the answer depends on, for the engine's persistent cache.
    return {"results": results, "provenance": provenance(job.path, program.loaded)}


def _lowered_as(target: str) -> str:
    """The target whose lowerer (with its rewrites) a target starts from: LLVM and the IREE
    targets compile the Linalg IR."""
    return "linalg" if target == "llvm" or is_iree_target(target) else target


def _weightless(program: Program) -> bool:
    """Whether the program was built without its weights (construct.py's meta path)."""
    return program.construction.get("construction") == "meta"


def _eager(program: Program) -> Any:
    from torch_mlir_lens.worker.iree.lowering import Eager

    return Eager(program.fn, program.args, program.kwargs, program.dynamic_shapes)


def _iree_lower(job: LowerJob, program: Program, lowerer: Any, target: str,
                options: Any) -> LowerResult:
    """An IREE target's result: the Linalg IR compiled by IREE (worker/iree/)."""
    from torch_mlir_lens.worker.iree.lowering import lower_target

    return lower_target(lowerer, target, arch=job.iree_archs.get(target),
                        weightless=_weightless(program), options=options,
                        eager=None if _weightless(program) else _eager(program),
                        profile=job.profile)


def _iree_export(job: ExportJob) -> dict[str, Any]:
    """The module compiled by IREE, written as a .vmfb (worker/iree/export.py); built
    without its weights when the job says so (they become named parameters)."""
    from torch_mlir_lens.worker.iree.export import export_vmfb

    output = os.path.abspath(job.output)
    program = _program(job, None if job.construct == "meta" else "export")
    lowerer, _used = _rewriting(job, program).lowerer("linalg")
    return export_vmfb(lowerer, job.target, output, arch=job.iree_arch,
                       weightless=_weightless(program))


def _iree_code(job: ExportCodeJob, program: Program) -> dict[str, Any]:
    """Python that runs the module's exported .vmfb with iree.runtime alone."""
    from torch_mlir_lens.rules.targets import target_title
    from torch_mlir_lens.worker.iree.export import python_snippet
    from torch_mlir_lens.worker.iree.tools import require
    from torch_mlir_lens.worker.verify.linalg import flat_tensors

    lowerer, used = _rewriting(job, program).lowerer("linalg")
    code = python_snippet(lowerer, job.target, arch=None, module=job.module,
                          inputs=flat_tensors((program.args, program.kwargs)),
                          version=require(target_title(job.target)).version)
    return {"code": code, "rewrites": used, "provenance": provenance(job.path, program.loaded)}


def _export(job: ExportJob) -> dict[str, Any]:
    target, output = job.target, job.output
    if not output:
        raise LensError(ErrorKind.BAD_REQUEST, "export needs an 'output' path")
    if target != CUSTOM_TARGET and not is_known_target(target):
        raise LensError(ErrorKind.BAD_REQUEST, f"unknown target {target!r}")
    from torch_mlir_lens.worker.lowering.writing import write_export
    from torch_mlir_lens.worker.stages.artifacts import refuse_source

    output = os.path.abspath(output)
    refuse_source(output, job.path)  # before the export's cost, not only at the write
    if is_iree_target(target):
        return _iree_export(job)
    program = _program(job, "export")  # the file must hold the real weights
    lowerer, _used = _rewriting(job, program).lowerer("linalg" if target == "llvm" else target)
    size = write_export(lowerer, target, output,
                        bytecode=job.bytecode, options=_lower_options(None))
    return ExportReply(path=output, bytes=size).to_json()


def _repro(job: ReproJob) -> dict[str, Any]:
    target, output_dir = job.target, job.output_dir
    if not output_dir:
        raise LensError(ErrorKind.BAD_REQUEST, "repro needs an 'output_dir'")
    from torch_mlir_lens.worker.lowering.writing import write_repro

    program = _program(job, "repro")
    lowerer, _used = _rewriting(job, program).lowerer("linalg" if target == "llvm" else target)
    return _jsonable(write_repro(lowerer, target, os.path.abspath(output_dir)))


def _verify(job: VerifyJob) -> dict[str, Any]:
    """JIT the module's Linalg IR, run it on the example inputs, compare with eager; on a
    mismatch, also the first user line whose values differ (verify/job.py)."""
    from torch_mlir_lens.worker.verify.job import check_options, verify_lowerer

    check_options(job)
    program = _program(job, "verify")
    if is_iree_target(job.target):
        from torch_mlir_lens.worker.iree.verify import verify_target

        lowerer, _used = _rewriting(job, program).lowerer("linalg")
        iree = verify_target(lowerer, job.target, _eager(program), arch=None, rtol=job.rtol,
                             atol=job.atol)
        iree.inputs_source = program.inputs_source
        return iree.to_json()
    lowerer, _used = _rewriting(job, program).lowerer(job.target)
    result = verify_lowerer(lowerer, program.fn, program.args, program.kwargs,
                            rtol=job.rtol, atol=job.atol, opt_level=job.opt_level,
                            dynamic_shapes=program.dynamic_shapes, backend=job.target)
    result.inputs_source = program.inputs_source
    return result.to_json()


def _rewrites(job: RewritesJob) -> dict[str, Any]:
    """Prove the rewrites of every culprit of the job's targets (worker/rewrites/)."""
    from torch_mlir_lens.rules.targets import BACKENDS

    targets = job.targets or list(BACKENDS)
    for target in targets:
        if target not in BACKENDS:
            raise LensError(ErrorKind.BAD_REQUEST, f"rewrites are proven for a backend "
                            f"({', '.join(BACKENDS)}), not {target!r}")
    try:
        program = _program(job, "rewrites", keep=False)  # Verify runs the module: real weights
    except LensError as err:
        if err.kind != ErrorKind.EXPORT_ERROR:
            raise
        return {**_pin_report(job, err, targets).to_json(), "provenance": provenance(job.path)}
    report = _rewriting(job, program).report(targets)
    return {**report.to_json(), "provenance": provenance(job.path, program.loaded)}


def _pin_report(job: ModuleJob, err: LensError, targets: list[str]) -> Any:
    """The `rewrites` job's answer for a module torch.export refuses: the proven pin or
    specialised export as the way past it on every target (one offer each, op
    `torch.export`), or why none."""
    from torch_mlir_lens.protocol.rewrite_results import RewriteOffer, RewriteReport

    proof = _export_fix_proof(job, err)
    report = RewriteReport(job.module)
    for target in targets:
        offer = RewriteOffer(target=target, file=err.file, line=err.line, op=EXPORT_OP,
                             ops=[EXPORT_OP], cause="torch.export")
        if proof is not None and proof.ok:
            offer.rewrites, offer.verified = [proof.rewrite], True
            offer.verify = getattr(proof, "verified",
                                   "✓ matches eager on the example and on a second input")
            offer.max_abs = proof.max_err
        else:
            offer.why = proof.why if proof is not None else (
                "no pin or specialised export fits this refusal")
        report.offers.append(offer)
    return report


def _export_code(job: ExportCodeJob) -> dict[str, Any]:
    """Python that reproduces the module's IR with plain torch-mlir, its rewrites inlined."""
    from torch_mlir_lens.worker.rewrite_jobs.variants import written_keys

    program = _program(job)
    if is_iree_target(job.target):
        return _iree_code(job, program)
    text = job.text if job.text is not None else read_text(job.path)
    written = written_keys(job.path, text, job.module)
    source = program.inputs_source or ""
    expr = job.inputs if source == "cli" else written.get("inputs") if source == "comment" \
        else None
    code = _rewriting(job, program).export_code(
        job.path, job.module, job.target, (expr, source), job.init or written.get("init"),
        program.dynamic_shapes)
    return {**code, "provenance": provenance(job.path, program.loaded)}


def _graph(job: GraphJob) -> dict[str, Any]:
    """The module's graph, each node's verdict at each target (worker/graph/)."""
    from torch_mlir_lens.rules.targets import BACKENDS
    from torch_mlir_lens.worker.graph.build import build_graph

    for target in job.targets:
        if target not in BACKENDS:
            raise LensError(ErrorKind.BAD_REQUEST, f"a graph's verdicts are a backend's "
                            f"({', '.join(BACKENDS)}), not {target!r}")
    program = _program(job)
    rewriting = _rewriting(job, program)
    options = _lower_options(None)
    text = job.text if job.text is not None else read_text(job.path)
    pins = _at_export(job, text)

    def lowered(target: str) -> tuple[LowerResult, LowerResult | None]:
        lowerer, used = rewriting.lowerer(target)
        result = lowerer.lower(target, options=options)
        result.rewrites = [*pins, *used]
        plain = program.lowerer.lower(target, options=options) if used else None
        return result, plain

    graph = build_graph(program.lowerer.program, module=job.module, file=job.path,
                        user_files=program.user_files,
                        torch_ir=program.lowerer.lower("torch", options=options),
                        targets=list(job.targets), lowered=lowered)
    return {"graph": graph.to_json(), "provenance": provenance(job.path, program.loaded)}


def _modules(job: ModulesJob) -> dict[str, Any]:
    from torch_mlir_lens.discovery import find_modules

    text = job.text if job.text is not None else read_text(job.path)
    return {"modules": [_jsonable(m) for m in find_modules(text, job.path)]}


def _ping(job: Job) -> dict[str, Any]:
    return {"pid": os.getpid()}


def _stats_job(job: Job) -> dict[str, Any]:
    from torch_mlir_lens.worker.blocks import counters

    return {**programs.stats(), **counters(), "pid": os.getpid()}


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if hasattr(value, "to_json"):
        return value.to_json()
    return value


def _past_refusal(handler: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    """`handler` run again through the proven pin or specialised export past its module's
    export refusal, when the job asks `--rewrites auto` (as `lower` does in
    `_past_export_refusal`)."""
    def run(job: Any) -> dict[str, Any]:
        try:
            return handler(job)
        except LensError as err:
            if err.kind != ErrorKind.EXPORT_ERROR or "auto" not in job.rewrites:
                raise
            proof = _export_fix_proof(job, err)
            if proof is None or not proof.ok:
                raise
            return handler(dataclasses.replace(job, rewrites=[*job.rewrites, proof.rewrite]))

    return run


_HANDLERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "lower": _lower,
    "export": _past_refusal(_export),
    "repro": _repro,
    "verify": _past_refusal(_verify),
    "rewrites": _rewrites,
    "export-code": _past_refusal(_export_code),
    "graph": _past_refusal(_graph),
    "modules": _modules,
    "ping": _ping,
    "stats": _stats_job,
}

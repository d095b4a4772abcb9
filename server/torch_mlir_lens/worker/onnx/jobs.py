"""The worker's jobs on an `.onnx` file: lower, verify and export, as for a Python module.

    HANDLERS[op](job) → the reply's result (the same shapes as a Python module's jobs)

A job's module is the file's one graph (`source/onnx_files.THE_GRAPH`, or the graph's own
name; another name is refused with the graph's). Its `rewrites` name the ONNX fixes to lower
through (fixes.py: `opset`, `shapes`, `fold`; `auto`: each that is proven, in that order);
`dims` give the dynamic dims' sizes. A lowerer is kept per model content, fixes and dims,
so several targets and jobs on one model import it once. The IREE targets compile the model's
Linalg IR with IREE (iree_targets.py) beside the other targets' answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import onnx

from torch_mlir_lens.findings.onnx_graph import model_graph
from torch_mlir_lens.protocol.jobs import (
    ExportJob,
    ExportReply,
    GraphJob,
    LowerJob,
    ModuleJob,
    VerifyJob,
)
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.rules import onnx_nodes
from torch_mlir_lens.rules.iree_targets import is_iree_target
from torch_mlir_lens.rules.rewrite_specs import parse_specs
from torch_mlir_lens.rules.targets import BACKENDS, CUSTOM_TARGET
from torch_mlir_lens.source.onnx_files import THE_GRAPH
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.onnx import fixes
from torch_mlir_lens.worker.onnx.checks import verify_model
from torch_mlir_lens.worker.onnx.iree_checks import export_iree, verify_iree
from torch_mlir_lens.worker.onnx.iree_targets import lower_iree
from torch_mlir_lens.worker.onnx.lowerer import OnnxLowerer
from torch_mlir_lens.worker.onnx.model_file import read_model
from torch_mlir_lens.worker.process import WORKER
from torch_mlir_lens.worker.stages import artifacts

MAX_LOWERERS = 2


def _lowerers() -> BoundedCache[str, tuple[OnnxLowerer, onnx.ModelProto]]:
    """The last models' lowerers, by path, text, fixes, dims and backends."""
    return WORKER.cache(f"{__name__}.lowerers", MAX_LOWERERS)


def fix_names(job: ModuleJob) -> list[str]:
    """The ONNX fixes a job asks for ("auto" among them when asked); LensError for others."""
    try:
        names = [s.name for s in parse_specs(job.rewrites)]
    except ValueError as exc:
        raise LensError(ErrorKind.BAD_REQUEST, f"--rewrites: {exc}") from None
    unknown = [n for n in names if n not in (*onnx_nodes.FIXES, "auto")]
    if unknown:
        raise LensError(ErrorKind.BAD_REQUEST, f"{', '.join(unknown)}: an ONNX model lowers "
                        f"through the fixes {', '.join(onnx_nodes.FIXES)} (or auto)",
                        file=job.path)
    return names


def _model(job: ModuleJob) -> onnx.ModelProto:
    model = read_model(job.path)
    if job.module not in (THE_GRAPH, model.graph.name):
        raise LensError(ErrorKind.UNKNOWN_MODULE, f"no graph {job.module!r}: an ONNX model "
                        f"has one graph, here {model.graph.name!r}", file=job.path)
    return model


def lowerer_for(job: ModuleJob, backends: list[str] | None = None,
                ) -> tuple[OnnxLowerer, onnx.ModelProto]:
    """The job's lowerer (its fixes applied) and the model as the file has it."""
    names = fix_names(job)
    key = repr((job.path, job.text, names, sorted(job.dims.items()), backends))
    kept = _lowerers().get(key)
    if kept is not None:
        return kept
    model = _model(job)
    name = model.graph.name or os.path.basename(job.path)
    if "auto" in names:
        fixed, done = _proven_fixes(model, job, backends or ["linalg"], name)
    else:
        fixed, done = fixes.applied(model, names, job.dims)
    lowerer = OnnxLowerer(fixed, path=job.path, module_name=name, fixes=done)
    _lowerers().put(key, (lowerer, model))
    return lowerer, model


def _culprit_count(lowerer: OnnxLowerer, backend: str) -> tuple[bool, int]:
    result = lowerer.lower(backend, options=LowerOptions())
    return result.ok, len({d.line for d in result.diagnostics if d.severity == "error"})


def prove(model: onnx.ModelProto, reference: onnx.ModelProto, job: ModuleJob, fix: str,
          backend: str, name: str) -> tuple[fixes.FixProof, onnx.ModelProto | None]:
    """Whether `fix` takes `model` further on `backend` and matches onnxruntime (fixes.py)."""
    changed = fixes.apply(model, fix, job.dims)
    if changed is None:
        return fixes.FixProof(fix, "", False, why="does not apply"), None
    fixed, detail = changed
    proof = fixes.FixProof(fix, detail, True)
    ok_before, proof.before = _culprit_count(OnnxLowerer(model, path=job.path,
                                                         module_name=name), backend)
    after = OnnxLowerer(fixed, path=job.path, module_name=name, fixes=[fix])
    ok_after, proof.after = _culprit_count(after, backend)
    if ok_before or not (ok_after or proof.after < proof.before):
        proof.why = "the model lowers no further with it"
        return proof, None
    run_on = backend if ok_after else "linalg"
    verdict = verify_model(after, reference, dims=job.dims, backend=run_on)
    if verdict.kind == ErrorKind.VERIFY_ERROR and run_on != "linalg":
        verdict = verify_model(after, reference, dims=job.dims, backend="linalg")
    proof.error = verdict.max_abs_err if verdict.compared() else None
    proof.proven = verdict.ok
    proof.why = "" if verdict.ok else verdict.message
    return proof, fixed if verdict.ok else None


def _proven_fixes(model: onnx.ModelProto, job: ModuleJob, backends: list[str],
                  name: str) -> tuple[onnx.ModelProto, list[str]]:
    """`auto`: each fix, in order, kept when it is proven on one of `backends`."""
    current, done = model, list[str]()
    for fix in onnx_nodes.FIXES:
        for backend in backends:
            proof, fixed = prove(current, model, job, fix, backend, name)
            if fixed is not None:
                current, done = fixed, [*done, fix]
                break
            if not proof.applies:
                break
    return current, done


def _offer(job: ModuleJob, lowerer: OnnxLowerer, reference: onnx.ModelProto,
           result: LowerResult) -> None:
    """A model that fails below the opset torch-mlir converts from: the opset fix, proven,
    offered in its culprits' messages (as a rewrite's proof is)."""
    if result.ok or lowerer.fixes or result.target not in (*BACKENDS, "torch") or \
            "auto" in fix_names(job):
        return
    unconverted = [d for d in result.diagnostics
                   if d.node is not None and d.reason == onnx_nodes.no_conversion(d.node)]
    if not unconverted:
        return
    backend = "linalg" if result.target == "torch" else result.target
    proof, _fixed = prove(lowerer.model, reference, job, onnx_nodes.OPSET_FIX, backend,
                          lowerer.module_name)
    if proof.proven:
        offer = onnx_nodes.fix_offer(proof.name, proof.detail, proof.error)
        for d in unconverted:
            d.message = f"{d.message}; {offer}"


def _targets(job: LowerJob) -> list[tuple[str, str | None]]:
    wanted: list[tuple[str, str | None]] = [(t, None) for t in job.targets]
    if job.pipeline and job.pipeline.strip():
        wanted.append((CUSTOM_TARGET, job.pipeline))
    if not wanted:
        raise LensError(ErrorKind.BAD_REQUEST, "the job names no target and no pipeline")
    return wanted


def lower(job: LowerJob) -> dict[str, Any]:
    """Each target's LowerResult (a model that does not import is a failed result each)."""
    wanted = _targets(job)
    options = LowerOptions(keep_weights=job.keep_weights, debug_info=job.debug_info,
                           print_after_all=job.print_after_all,
                           list_unsupported=job.list_unsupported)
    backends = [t for t, _ in wanted if t in BACKENDS]
    lowerer, reference = lowerer_for(job, backends or None)
    results = []
    for target, pipeline in wanted:
        if is_iree_target(target):
            result = lower_iree(lowerer, target, arch=job.iree_archs.get(target),
                                options=options)
        else:
            result = lowerer.lower(target, pipeline=pipeline, options=options)
        result.rewrites = list(lowerer.fixes)
        result.inputs_source = None
        _offer(job, lowerer, reference, result)
        results.append(result.to_json(compact_map=True))
    return {"results": results}


def verify(job: VerifyJob) -> dict[str, Any]:
    """The model's `job.target` IR (an IREE target's compiled module) run and compared
    with onnxruntime."""
    if is_iree_target(job.target):
        lowerer, reference = lowerer_for(job, ["linalg"])
        return verify_iree(lowerer, reference, target=job.target, dims=job.dims,
                           rtol=job.rtol, atol=job.atol).to_json()
    if job.target not in BACKENDS:
        raise LensError(ErrorKind.BAD_REQUEST, f"Verify runs {', '.join(BACKENDS)} and the "
                        f"IREE targets, not {job.target!r}")
    lowerer, reference = lowerer_for(job, [job.target])
    return verify_model(lowerer, reference, dims=job.dims, backend=job.target, rtol=job.rtol,
                        atol=job.atol, opt_level=job.opt_level).to_json()


def export(job: ExportJob) -> dict[str, Any]:
    """The model's IR at `job.target` (an IREE target's `.vmfb`) written atomically
    (never over a source)."""
    output = os.path.abspath(job.output)
    artifacts.refuse_source(output, job.path)
    if is_iree_target(job.target):
        lowerer, _reference = lowerer_for(job, ["linalg"])
        return export_iree(lowerer, job.target, output, arch=job.iree_arch)
    lowerer, _reference = lowerer_for(job, [job.target] if job.target in BACKENDS else None)
    module = lowerer.module_for(job.target)
    data = artifacts.module_bytes(module, bytecode=job.bytecode, debug_info=False)
    return ExportReply(path=output, bytes=artifacts.atomic_write(output, data)).to_json()


def graph(job: GraphJob) -> dict[str, Any]:
    """The model as the graph view draws a module: each node's verdict at `job.targets`
    (findings/onnx_graph.py), the values between nodes, its names' hierarchy."""
    targets = [t for t in job.targets if t in BACKENDS] or list(BACKENDS)
    unknown = [t for t in job.targets if t not in BACKENDS]
    if unknown:
        raise LensError(ErrorKind.BAD_REQUEST, f"a graph's verdicts are a backend's "
                        f"({', '.join(BACKENDS)}), not {', '.join(unknown)}")
    lowerer, _reference = lowerer_for(job, targets)
    options = LowerOptions()
    results = {t: lowerer.lower(t, options=options) for t in targets}
    drawn = model_graph(lowerer.path, lowerer.graph(), results, targets,
                        raw=lowerer.lower("raw", options=options),
                        torch_ir=lowerer.lower("torch", options=options))
    return {"graph": drawn.to_json()}


HANDLERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "lower": lower, "verify": verify, "export": export, "graph": graph}


def handler(op: str) -> Callable[[Any], dict[str, Any]]:
    """The handler of an ONNX model's job `op`; LensError for the jobs a model has none of."""
    found = HANDLERS.get(op)
    if found is None:
        raise LensError(ErrorKind.BAD_REQUEST, f"an ONNX model has no {op!r} job yet (lower, "
                        "verify, export and graph do)")
    return found

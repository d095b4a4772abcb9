"""Run MLIR pass pipelines ourselves: diagnostics captured, the IR after each pass on request.

Never torch-mlir's run_pipeline_with_repro_report: it prints to fd 2 and writes a repro file
with every weight into $TMPDIR. A failing pass raises PassFailure with the error diagnostics
(and the passes dumped so far); a pipeline that does not parse raises LensError("bad-pipeline").

A pass that crashes the process (an assertion, a segfault in a conversion): in a worker that
guards its passes (crash_guard.guarding_passes, after a crash), pipelines run in a forked child
and come back as bytecode; a crash is then a PassFailure whose one error names the pass and an
op that sets it off, at that op's location (crash_locate.py), and whose `crash` says so.
Otherwise `_run_parsed` runs them in-process (the frame the worker client looks for in a crash
dump).
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import torch as torch_d
from torch_mlir.passmanager import PassManager

from torch_mlir_lens.protocol.results import ErrorKind, LensError, PassIr
from torch_mlir_lens.rules.targets import CUSTOM_TARGET, DIALECT_LOADING_PIPELINE, TARGETS
from torch_mlir_lens.system.reading import IR_DUMP, read_text
from torch_mlir_lens.worker.culprits import crash_locate
from torch_mlir_lens.worker.culprits.partial import Partial
from torch_mlir_lens.worker.ir import crash_guard, ir_text
from torch_mlir_lens.worker.ir.literals import mark_elided
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag, captured, error_diags


class PassFailure(Exception):
    """A pass failed: its error diagnostics, and the IR after each pass when it was dumped.
    `crash` when the pass crashed torch-mlir (the errors then hold one diagnostic saying so)."""

    def __init__(self, errors: list[Diag], passes: list[PassIr] | None,
                 crash: crash_guard.Crash | None = None) -> None:
        super().__init__(errors[0].message if errors else "pass pipeline failed")
        self.errors = errors
        self.passes = passes
        self.crash = crash

    def __reduce__(self) -> tuple[Any, ...]:  # comes back from a forked child whole
        return PassFailure, (self.errors, self.passes, self.crash)


def new_context() -> ir.Context:
    """A context for importing and lowering: torch dialect, one thread, errors captured."""
    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    # IR printing with multithreading on can SIGABRT; there is one function anyway.
    ctx.enable_multithreading(False)
    ctx.emit_error_diagnostics = False
    return ctx


def parsing_context() -> ir.Context:
    """A context that can parse every IR we print or write, StableHLO and TMTensor included.

    The StableHLO and TMTensor dialects (the latter in Linalg IR: cumsum, scatter, sort) have
    no Python registration in this wheel: they are loaded only as dependencies of passes.
    Running the conversion passes once on an empty module loads them.
    """
    ctx = new_context()
    with ctx, captured(ctx):
        empty = ir.Module.create(ir.Location.unknown(ctx))
        PassManager.parse(DIALECT_LOADING_PIPELINE, context=ctx).run(empty.operation)
    return ctx


def backend_pipeline(target: str, pipeline: str | None) -> str:
    """The pipeline that lowers torch-backend IR to `target` (`pipeline` for "custom")."""
    if target == CUSTOM_TARGET:
        if not pipeline:
            raise LensError(ErrorKind.BAD_REQUEST, "the custom target needs a pipeline")
        return pipeline
    spec = TARGETS.get(target)
    if spec is None or spec.backend_pipeline is None:
        raise LensError(ErrorKind.BAD_REQUEST, f"{target!r} is not a backend target")
    return spec.backend_pipeline


def _read_pass_dumps(root: str) -> list[PassIr]:
    """The per-pass files of `enable_ir_printing(tree_printing_dir_path=...)`, in run order."""
    files = []
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if name.endswith(".mlir"):
                path = os.path.join(dirpath, name)
                counters = tuple(int(n) for n in re.findall(r"(\d+)_", name))
                files.append((os.stat(path).st_mtime_ns, counters[::-1], path, name))
    files.sort()
    passes = []
    for *_keys, path, name in files:
        pass_name = re.sub(r"^(\d+_)+", "", name)[: -len(".mlir")]
        passes.append(PassIr(pass_name, read_text(path, IR_DUMP, errors="replace")))
    return passes


def run_pipeline(module_op: Any, pipeline: str, *, print_after_all: bool = False,
                 keep_weights: bool = False) -> list[PassIr] | None:
    """Run `pipeline` on `module_op` in place, diagnostics captured.

    Returns the IR after each pass when asked. A syntax error / unknown pass raises
    LensError("bad-pipeline"); a failing pass raises PassFailure with the error diagnostics,
    a crashing one PassFailure with `crash` set (the worker survives it).
    """
    ctx = module_op.context
    with ctx, captured(ctx) as diags:
        try:
            pm = PassManager.parse(pipeline, context=ctx)
        except (ValueError, ir.MLIRError) as exc:
            detail = "; ".join(d.message for d in diags) or str(exc)
            raise LensError(ErrorKind.BAD_PIPELINE,
                            f"bad pass pipeline {pipeline!r}: {detail}") from exc
    step = crash_locate.pipeline_title(pipeline)
    try:
        if not crash_guard.guarding_passes():
            try:
                return _run_parsed(module_op, pm, print_after_all, keep_weights)
            except crash_guard.THROWN as exc:  # a C++ exception: crashed, the worker lives
                raise crash_guard.Crash.thrown(step, exc) from exc
        # In a forked child (crash_guard.py): a crash must not end the worker.
        return crash_guard.run_in_place(
            module_op, lambda: _run_parsed(module_op, pm, print_after_all, keep_weights),
            step=step, pipeline=pipeline)
    except (crash_guard.Crash, *crash_guard.THROWN) as exc:
        crash = exc if isinstance(exc, crash_guard.Crash) else crash_guard.Crash.thrown(step, exc)
        diag = crash_locate.crash_diag(module_op, pipeline, crash)
        raise PassFailure([diag], None, crash) from exc


def _run_parsed(module_op: Any, pm: Any, print_after_all: bool,
                keep_weights: bool) -> list[PassIr] | None:
    """Run the parsed pipeline `pm` on `module_op` in place (see run_pipeline)."""
    ctx = module_op.context
    with ctx, captured(ctx) as diags:
        if not print_after_all:
            try:
                pm.run(module_op.operation)
            except ir.MLIRError as exc:
                raise PassFailure(error_diags(exc, diags), None) from exc
            return None
        with tempfile.TemporaryDirectory(prefix="torch-mlir-lens-passes-") as dump_dir:
            pm.enable_ir_printing(
                print_after_all=True, tree_printing_dir_path=dump_dir,
                large_resource_limit=None if keep_weights else ir_text.ELIDE_RESOURCES_OVER,
            )
            failure: ir.MLIRError | None = None
            try:
                pm.run(module_op.operation)
            except ir.MLIRError as exc:
                failure = exc
            passes = _read_pass_dumps(dump_dir)
        if not keep_weights:
            passes = [PassIr(p.name, mark_elided(p.ir)) for p in passes]
        if failure is not None:
            raise PassFailure(error_diags(failure, diags), passes) from failure
        return passes


# A function declaration dumped on its own by a function pass (ops outlined into calls).
_DECLARATION = re.compile(r"^(//[^\n]*\n)?\s*func\.func private @[^\n{]*\s*$")


def partial_passes(part: Partial, *, keep_weights: bool) -> list[PassIr]:
    """The pass picker's list for a partial lowering: the Torch IR with the rejected ops
    outlined, then the IR after each pass of the backend pipeline that lowered it."""
    first = PassIr("outline-rejected-ops", ir_text.print_asm(part.outlined,
                                                             keep_weights=keep_weights))
    try:
        passes = run_pipeline(part.outlined.clone(), part.pipeline, print_after_all=True,
                              keep_weights=keep_weights) or []
    except PassFailure as failure:  # a contract check failing on the calls: expected
        passes = failure.passes or []
    # Function passes also dump each declared function alone: keep the module's dumps.
    return [first, *(p for p in passes if not _DECLARATION.match(p.ir))]

"""A stitched module through the backend pipelines, its block calls kept where they can be.

    release_calls(module)                   after the Torch pipeline: calls may inline again
    lower_stitched(module, target, pipe)    in place of run_pipeline for a stitched module
    stitched_runner(target)                 the same, as run_pipeline is called
    fx_result(module_name, program, users)  the `fx` target: the parent's graph, each block's

Which way each target goes is `stitch.backend_plan`'s (and why, in `stitch.py`'s docstring).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from torch_mlir_lens.protocol.results import PassIr
from torch_mlir_lens.worker.blocks.fx_view import fx_result
from torch_mlir_lens.worker.blocks.stitch import backend_plan, check_contract, release_calls


def lower_stitched(module_op: Any, target: str, pipeline: str, *, print_after_all: bool = False,
                   keep_weights: bool = False) -> list[PassIr] | None:
    """Lower the stitched Torch-backend `module_op` to `target` in place (as `run_pipeline`
    does a plain one): PassFailure when a pass or the backend's contract check fails."""
    from torch_mlir_lens.worker.stages.pipeline import run_pipeline

    plan = backend_plan(target, pipeline, module_op.context)
    if plan.prelude is not None:
        run_pipeline(module_op, plan.prelude)
    passes = run_pipeline(module_op, plan.pipeline, print_after_all=print_after_all,
                          keep_weights=keep_weights)
    if plan.check is not None:
        check_contract(module_op, plan.check)
    return passes


def stitched_runner(target: str) -> Callable[..., list[PassIr] | None]:
    """`lower_stitched` for `target`, called as `run_pipeline(module, pipeline, ...)`."""
    return functools.partial(_run_for, target)


def _run_for(target: str, module_op: Any, pipeline: str, **options: Any) -> list[PassIr] | None:
    return lower_stitched(module_op, target, pipeline, **options)


__all__ = ["fx_result", "lower_stitched", "release_calls", "stitched_runner"]

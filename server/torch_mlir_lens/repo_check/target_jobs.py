"""A module's targets as the jobs that lower them, each job with its own time-out.

The time-out (`--timeout`, `timeoutSeconds`) is the engine's, per job. torch-mlir's backends
(and any other target torch-mlir makes) share one job: the module is exported once and each
backend lowered from it, what the time-out is sized for. Each IREE target is a job of its own:
an IREE compile of a big model takes about as long as its lowering, so four of them in the
module's one job would eat its time-out, and one slow compile would take every target's answer
with it. Alone, a compile that runs out of time fails its own target (`iree-rocm/timeout`) and
the other targets keep their answers. The later jobs start from what the worker kept of the
first (the exported program, its Linalg IR): the module is still exported once.

    lower_targets(engine, job, targets, iree_archs) → Lowered (results, targets whose job failed)
    verdicts(targets, lowered)                      → the report entry's `targets`
    refusal(results)                                → an architecture IREE has no target for
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.rules.iree_targets import is_iree_target
from torch_mlir_lens.rules.verdict import verdict_json


def job_groups(targets: list[str]) -> list[list[str]]:
    """The targets of each job, in order: the torch-mlir ones together, each IREE one alone."""
    shared = [t for t in targets if not is_iree_target(t)]
    return ([shared] if shared else []) + [[t] for t in targets if is_iree_target(t)]


@dataclass
class Lowered:
    """A module's results, and the targets whose own job failed (a crash, a time-out)."""

    results: list[LowerResult] = field(default_factory=list)
    failed: dict[str, LensError] = field(default_factory=dict)


async def lower_targets(engine: Any, job: Any, targets: list[str],
                        iree_archs: dict[str, str]) -> Lowered:
    """Every target's result. LensError when the first job fails (the module fails before any
    target: it does not load, its inputs, a crash or time-out of its export); a later job's
    failure is its target's."""
    lowered = Lowered()
    for i, group in enumerate(job_groups(targets)):
        archs = {t: iree_archs[t] for t in group if t in iree_archs}
        try:
            lowered.results += await engine.lower(job, targets=group, iree_archs=archs)
        except LensError as err:
            if i == 0:
                raise
            lowered.failed.update(dict.fromkeys(group, err))
    return lowered


def verdicts(targets: list[str], lowered: Lowered) -> dict[str, Any]:
    """Each target's verdict (rules/verdict.py), in the run's order of targets."""
    by_target = {r.target: r for r in lowered.results}
    out: dict[str, Any] = {}
    for target in targets:
        if target in by_target:
            out[target] = verdict_json(by_target[target])
        elif target in lowered.failed:
            out[target] = {"ok": False, "unsupported": [],
                           "error": lowered.failed[target].message, "error_line": None}
    return out


def refusal(results: list[LowerResult]) -> str | None:
    """The words of an IREE target's refusal of its architecture (the same for every module:
    the run's bad input), or None."""
    for result in results:
        if is_iree_target(result.target):
            for d in result.diagnostics:
                if d.kind == ErrorKind.BAD_REQUEST:
                    return d.message
    return None


__all__ = ["Lowered", "job_groups", "lower_targets", "refusal", "verdicts"]

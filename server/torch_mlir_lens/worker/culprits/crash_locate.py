"""Where a pass pipeline that crashed torch-mlir crashed: the pass, and an op that sets it off.

Only runs after a crash (crash_guard.Crash), each try in a forked child of its own:

1. the pass: the pipeline is flattened into its passes (`func.func(a,b)` → `func.func(a)`,
   `func.func(b)`), and the shortest prefix that still crashes is found by bisection; its last
   pass is the one;
2. the op: each distinct op of the input module (same name, types, attributes, constant
   operands) is copied into a module of its own (op_isolation.isolate); the prefix runs on each
   in turn, and bisection over them finds one that crashes. An op that crashes alone is named
   with its location; when none does (the crash needs the ops around it), the pass alone is
   named.

About log2(passes) + log2(distinct ops) children: seconds, on a path that used to end the
worker. A crash that takes long to come (a pass allocating until `std::bad_alloc`) stops the
search at `BUDGET_S`: what was found by then is named.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir
from torch_mlir.passmanager import PassManager

from torch_mlir_lens.rules.targets import TARGETS, TORCH_BACKEND_PIPELINE
from torch_mlir_lens.worker.culprits import illegal_ops, op_isolation
from torch_mlir_lens.worker.ir.crash_guard import THROWN, Crash, run_forked
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag, captured

MAX_OPS = 2000  # distinct ops tried at most (beyond: the pass alone is named)
BUDGET_S = 30.0  # no new try starts after this many seconds of searching
_PASS_NAME = re.compile(r"([A-Za-z][\w.-]*)(?:\{[^}]*\})?\)+$")


@dataclass
class CrashSite:
    """The pass that crashed and, when one crashes alone, the op (name and location text)."""

    pass_name: str | None
    op: str | None
    location: str | None


def _split_top(text: str) -> list[str]:
    """`a,func.func(b,c),d` → ["a", "func.func(b,c)", "d"] (commas inside brackets kept)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current:
        parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def flat_passes(pipeline: str, ctx: ir.Context) -> list[str]:
    """The pipeline's passes in order, each a one-pass pipeline string of the same anchor."""
    with ctx, captured(ctx):
        expanded = str(PassManager.parse(pipeline, context=ctx))
    anchor, _, rest = expanded.partition("(")
    out: list[str] = []
    for part in _split_top(rest[:-1]):
        nested, _, inner = part.partition("(")
        if inner and nested in ("func.func",) and "{" not in nested:
            out.extend(f"{nested}({p})" for p in _split_top(inner[:-1]))
        else:
            out.append(part)
    return [f"{anchor}({p})" for p in out]


def _run_prefix(module_op: Any, passes: list[str]) -> None:
    """Run `passes` on `module_op` (in place), errors swallowed: only a crash matters."""
    ctx = module_op.context
    with ctx, captured(ctx):
        for p in passes:
            try:
                PassManager.parse(p, context=ctx).run(module_op.operation)
            except ir.MLIRError:
                return


class _OutOfTime(Exception):
    """The search ran past BUDGET_S."""


def _crashes(modules: list[Any], passes: list[str], deadline: float) -> bool:
    """Whether running `passes` on each of `modules` (clones, one after another, failures
    ignored) crashes."""
    if time.monotonic() > deadline:
        raise _OutOfTime

    def step() -> bool:
        for module_op in modules:
            _run_prefix(module_op.clone(), passes)
        return False
    try:
        return run_forked(step, step="a crash search")
    except (Crash, *THROWN):
        return True


def _crashing_prefix(module_op: Any, passes: list[str], deadline: float) -> int | None:
    """The length of the shortest prefix of `passes` that crashes (None: none does)."""
    if not _crashes([module_op], passes, deadline):
        return None
    low, high = 0, len(passes)  # passes[:low] does not crash, passes[:high] does
    while high - low > 1:
        mid = (low + high) // 2
        if _crashes([module_op], passes[:mid], deadline):
            high = mid
        else:
            low = mid
    return high


def _crashing_op(module_op: Any, passes: list[str],
                 deadline: float) -> tuple[str, str] | None:
    """An op of `module_op` that crashes `passes` alone: (name, location), or None."""
    candidates: list[tuple[str, str, Any]] = []
    seen: set[str] = set()
    for op in illegal_ops.walk_ops(module_op):
        name = illegal_ops.op_name(op)
        if not illegal_ops.is_candidate(name):
            continue
        key = op_isolation.isolation_key(op)
        if key in seen:
            continue
        seen.add(key)
        try:
            small = op_isolation.isolate(op)
        except (RuntimeError, ValueError, KeyError):
            continue
        candidates.append((illegal_ops.display_name(op), str(op.location), small))
        if len(candidates) >= MAX_OPS:
            break
    if not candidates:
        return None
    group = candidates
    if not _crashes([c[2].operation for c in group], passes, deadline):
        return None
    while len(group) > 1:  # each one alone: the half holding a crasher crashes
        half = group[: len(group) // 2]
        crashed = _crashes([c[2].operation for c in half], passes, deadline)
        group = half if crashed else group[len(half):]
    return group[0][0], group[0][1]


def locate(module_op: Any, pipeline: str) -> CrashSite:
    """The pass of `pipeline` that crashes on `module_op` (left untouched), and an op of it
    that crashes alone. Never raises: what cannot be found is None."""
    deadline = time.monotonic() + BUDGET_S
    pass_name: str | None = None
    try:
        passes = flat_passes(pipeline, module_op.context)
        length = _crashing_prefix(module_op, passes, deadline)
        if length is None:
            return CrashSite(None, None, None)
        named = _PASS_NAME.search(passes[length - 1])
        pass_name = named.group(1) if named else passes[length - 1]
        found = _crashing_op(module_op, passes[:length], deadline)
    except Exception:  # best effort (or out of time): the crash is reported either way
        return CrashSite(pass_name, None, None)
    if found is None:
        return CrashSite(pass_name, None, None)
    return CrashSite(pass_name, found[0], found[1])


def pipeline_title(pipeline: str) -> str:
    """How a pipeline is named in messages: "the Linalg pipeline", "the Torch pipeline"."""
    if pipeline == TORCH_BACKEND_PIPELINE:
        return "the Torch pipeline"
    for target in TARGETS.values():
        if target.backend_pipeline == pipeline:
            return f"the {target.title} pipeline"
    return "the pass pipeline"


_CRASHED_OP = re.compile(r"^'([^']+)' op crashed torch-mlir")


def crashed_op(diag: Diag) -> illegal_ops.FoundOp | None:
    """The op a crash diagnostic (crash_diag) names, as a found op to outline, or None."""
    named = _CRASHED_OP.match(diag.message)
    if named is None or diag.location == "loc(unknown)":
        return None
    return illegal_ops.FoundOp(named.group(1), diag.location, diag.message)


def crash_diag(module_op: Any, pipeline: str, crash: Crash) -> Diag:
    """The error a crash becomes: the pass, an op that crashes it alone (at that op's
    location), the signal and torch-mlir's last words. `module_op`: the pipeline's input."""
    site = locate(module_op, pipeline)
    where = f" in `{site.pass_name}`, a pass of {crash.step}" if site.pass_name else \
        f" in {crash.step}"
    detail = f": {crash.detail}" if crash.detail else ""
    if site.op:
        message = f"'{site.op}' op crashed torch-mlir ({crash.signal_name}){where}{detail}"
    else:
        message = f"torch-mlir crashed ({crash.signal_name}){where}{detail}"
    return Diag("error", message, site.location or "loc(unknown)")


__all__ = ["CrashSite", "crash_diag", "crashed_op", "flat_passes", "locate", "pipeline_title"]

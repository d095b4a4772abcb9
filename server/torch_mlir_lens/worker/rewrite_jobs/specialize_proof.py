"""Proof of the export specialised to the example (rewrites/specialize.py) before it is offered.

`export.specialize` decides each line torch.export refused (`if mask.any():`, a size read from
`index.max()`, an `assert` on the values) as the example inputs decide it, and the graph keeps
only that path. It is offered only when:

1. the forward runs eagerly on the example inputs, on a second input (pin_proof.
   second_inputs: floats drawn around the example's, integers and booleans shuffled), on a
   third drawn the same way and on the example with its floats negated, and writes none of
   the module's buffers: a decision on a counter or a cache would not hold on the next call;
2. the module exports specialised (draft_export decides at least one refused line, its runtime
   checks dropped) and lowers to Linalg;
3. Verify matches eager PyTorch, the module as the file builds it (not specialised), on each
   of those inputs.

A line the second input decides the other way (`if x.sum() > 0:` on inputs of either sign)
exports and lowers, and is refused by step 3: the specialisation would be wrong there. The
third input and the negated example are there because examples are often drawn at random
(`torch.randn`): a decision that inputs drawn alike take either way would otherwise be offered
or not by chance, from one check to the next (negated, one on the sign of the data is refused
every time). Still a proof on a few inputs, not for all of them: the offer says so.

    prove_specialization(fn, args, kwargs, user_files=..., module_name=...) → SpecializeProof
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from torch_mlir_lens.protocol.frames import short_path
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.loading.kept_state import values_kept
from torch_mlir_lens.worker.rewrite_jobs.pin_proof import SEED, second_inputs
from torch_mlir_lens.worker.rewrites import specialize
from torch_mlir_lens.worker.stages.export_problems import Problem

MAX_NAMED = 3  # refused lines named in the offer; more are counted
# The proof exports, lowers and runs the module four times after every data-dependent refusal
# a lowering meets: past this many weights it would hold the worker for minutes, and is not
# tried (the comment's `rewrites=export.specialize` still applies it, unproven).
MAX_PROVEN_WEIGHTS = 20_000_000


@dataclass
class SpecializeProof:
    """The verdict on the export specialised to the example."""

    ok: bool
    why: str = ""  # why it is refused ("" when proven)
    decisions: list[Problem] = field(default_factory=list)  # the lines decided, and how
    user_files: list[str] = field(default_factory=list)  # lines there are named "line N"
    max_err: float | None = None  # the largest error Verify saw (when proven)
    checked: str = "on the example, on two other inputs and on the example negated"

    @property
    def rewrite(self) -> str:
        """The rewrite name that applies it (`export.specialize`)."""
        return specialize.NAME

    @property
    def verified(self) -> str:
        """What Verify said of it, for the `rewrites` job's offer."""
        return f"✓ matches eager {self.checked}"

    def lines(self) -> str:
        """The decided lines in words: "`if is_special.any():` (line 12)". Not what each came
        to: with inputs drawn at random, that would change the message from one check to the
        next (export_errors.py says no such value either)."""
        named = [f"`{p.code}` ({self._where(p)})" for p in self.decisions[:MAX_NAMED]]
        more = len(self.decisions) - MAX_NAMED
        return ", ".join(named) + (f" and {more} more" if more > 0 else "")

    def _where(self, problem: Problem) -> str:
        return (f"line {problem.line}" if problem.file in self.user_files
                else f"{short_path(problem.file)}:{problem.line}")

    def offer(self) -> str:
        """How a proven specialisation is offered, in the export error's message: what it
        decides, and that it holds only for inputs deciding the same way."""
        err = f", max error {self.max_err:.1e}" if self.max_err is not None else ""
        return (f"a proven way past it: `# torch-mlir-lens: rewrites={self.rewrite}` exports "
                f"the module specialised to the example's decisions of {self.lines()}: the "
                f"graph holds only for inputs that decide these lines the same way (exports, "
                f"lowers, and matches eager {self.checked}{err}); `--rewrites auto` applies it")


def negated(values: Sequence[Any]) -> tuple[Any, ...] | None:
    """The example with its floating-point tensors negated (None when it has none): the
    other side of every decision on the sign of the data."""
    if not any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in values):
        return None
    return tuple(-v if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                 for v in values)


def _buffer_values(module: Any) -> dict[str, torch.Tensor]:
    if not isinstance(module, torch.nn.Module):
        return {}
    return {name: b.detach().clone() for name, b in module.named_buffers() if not b.is_meta}


def _eager_why(fn: Any, runs: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> str:
    """Why the eager forward cannot stand for every input ("" when it runs on each input and
    writes none of the module's buffers)."""
    before = _buffer_values(fn)
    with values_kept(fn), torch.no_grad():
        for which, args, kwargs in runs:
            try:
                fn(*args, **kwargs)
            except Exception as exc:  # the user's forward on other values: no verdict
                return f"the forward fails on {which} ({type(exc).__name__})"
            for name, value in _buffer_values(fn).items():
                old = before.get(name)
                if old is not None and not (old.shape == value.shape
                                            and torch.equal(old, value)):
                    return (f"the forward writes buffer `{name}`: a decision on the module's "
                            "state would not hold on the next call")
    return ""


def prove_specialization(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None, *,
                         user_files: Sequence[str], module_name: str,
                         second: tuple[Any, ...] | None = None) -> SpecializeProof:
    """Whether exporting `fn` specialised to the example is proven (`second`: the second
    input, else pin_proof.second_inputs of the example's)."""
    from torch_mlir_lens.worker.ir.library_frames import library_files
    from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program
    from torch_mlir_lens.worker.rewrites.apply import exported_of
    from torch_mlir_lens.worker.stages.export_problems import report_problems
    from torch_mlir_lens.worker.verify.job import verify_lowerer

    kwargs = dict(kwargs or {})
    files = list(user_files)
    weights = sum(p.numel() for p in fn.parameters()) if isinstance(fn, torch.nn.Module) else 0
    if weights > MAX_PROVEN_WEIGHTS:
        return SpecializeProof(False, f"not proven: {weights:,} weights are more than the "
                               f"background proof runs ({MAX_PROVEN_WEIGHTS:,})",
                               user_files=files)
    other = second if second is not None else second_inputs(args)
    inputs = [("the example", args), ("a second input", other),
              ("a third input", second_inputs(args, seed=SEED + 1))]
    flipped = negated(args)
    if flipped is not None:
        inputs.append(("the example negated", flipped))
    eager = _eager_why(fn, [(which, values, kwargs) for which, values in inputs])
    if eager:
        return SpecializeProof(False, eager, user_files=files)
    try:
        program = export_program(fn, args, kwargs, user_files=files, specialize=True)
    except LensError as err:
        return SpecializeProof(False, f"the module does not export specialised: "
                               f"{err.message.splitlines()[0]}", user_files=files)
    libraries = library_files()
    decisions = report_problems(exported_of(program) or program,
                                lambda f: f in files or libraries.is_library(f))
    proof = SpecializeProof(False, decisions=decisions, user_files=files)
    if flipped is None:  # no floats to negate
        proof.checked = "on the example and on two other inputs"
    if not decisions:
        proof.why = "draft_export decides no line of the module: nothing to specialise"
        return proof
    lowerer = ProgramLowerer(program, module_name=module_name, user_files=files)
    if not lowerer.lower("linalg").ok:
        proof.why = "the module specialised does not lower to Linalg"
        return proof
    worst = 0.0
    for which, values in inputs:
        result = verify_lowerer(lowerer, fn, values, kwargs, locate=False)
        if not result.ok:
            proof.why = f"Verify on {which}: {result.message.removeprefix('✗ ')}"
            return proof
        worst = max(worst, result.max_abs_err)
    proof.ok, proof.max_err = True, worst
    return proof


__all__ = ["SpecializeProof", "prove_specialization"]

"""Proof of a pin (rewrites/pins.py) before it is offered, as a rewrite is proven.

A pin of the module's one-element tensor `name` to its value is offered only when:

1. the forward does not write it: run eagerly on the example inputs and on a second input,
   the tensor keeps its value (a counter, a lazily initialised codebook that this example
   initialises, is refused);
2. the module exports with it (the refused line is decided) and lowers to Linalg;
3. Verify matches eager PyTorch, the module as the file builds it (not pinned), on the
   example inputs and on a second input of the same shapes (floats drawn around the
   example's, integers and booleans the example's own values shuffled).

A pin to another value than the tensor's (a deliberately wrong fix) exports and lowers, and is
refused by step 3.

    prove_pin(fn, args, kwargs, name, user_files=..., module_name=...) → PinProof
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.loading.kept_state import values_kept
from torch_mlir_lens.worker.rewrites import pins

SEED = 20261001


@dataclass
class PinProof:
    """The verdict on one pin."""

    name: str  # the tensor's dotted name in the module ("vq.initted")
    value: Any  # the Python value it is pinned to
    ok: bool
    why: str = ""  # why it is refused ("" when proven)
    max_err: float | None = None  # the largest error Verify saw (proven pins)

    @property
    def rewrite(self) -> str:
        """The rewrite name that applies it (`pin.vq.initted`)."""
        return f"{pins.PREFIX}{self.name}"

    def offer(self) -> str:
        """How a proven pin is offered, in the export error's message."""
        err = f", max error {self.max_err:.1e}" if self.max_err is not None else ""
        return (f"a proven way past it: `# torch-mlir-lens: rewrites={self.rewrite}` pins "
                f"`{self.name}` to its value ({self.value}): the exported graph is specialised "
                f"to it (the forward never writes it; exports, lowers, and matches eager on "
                f"the example and on a second input{err}); `--rewrites auto` applies it")


def second_inputs(values: Sequence[Any], seed: int = SEED) -> tuple[Any, ...]:
    """Inputs of the same shapes and dtypes, other values: floats drawn around the example's
    (same mean and spread), integers and booleans the example's own values shuffled (`seed`
    draws another such input)."""
    generator = torch.Generator().manual_seed(seed)

    def other(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or t.numel() == 0:
            return t
        if t.is_floating_point():
            spread = float(t.float().std()) if t.numel() > 1 else 1.0
            noise = torch.randn(t.shape, generator=generator)
            return (noise * (spread or 1.0) + float(t.float().mean())).to(t.dtype)
        order = torch.randperm(t.numel(), generator=generator)
        return t.flatten()[order].reshape(t.shape).clone()

    return tuple(other(v) for v in values)


def _written(fn: torch.nn.Module, name: str, runs: list[tuple[tuple[Any, ...], dict[str, Any]]]
             ) -> str:
    """Why the forward writes `name` ("" when it keeps its value on every run)."""
    before, _ = pins.pinnable(fn, name)
    with values_kept(fn), torch.no_grad():
        for args, kwargs in runs:
            try:
                fn(*args, **kwargs)
            except Exception as exc:  # the user's forward on other values: no verdict
                return f"the forward fails on a second input ({type(exc).__name__})"
            after, _ = pins.pinnable(fn, name)
            if after != before:
                return f"the forward writes it ({before}, then {after})"
    return ""


def prove_pin(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None, name: str, *,
              user_files: Sequence[str], module_name: str,
              value: Any = None) -> PinProof:
    """Whether pinning `name` to its value (or to `value`: a test's wrong fix) is proven."""
    from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program
    from torch_mlir_lens.worker.verify.job import verify_lowerer

    kwargs = dict(kwargs or {})
    current, why = pins.pinnable(fn, name)
    if current is None:
        return PinProof(name, None, False, why)
    pinned_to = current if value is None else value
    other = second_inputs(args)
    written = _written(fn, name, [(args, kwargs), (other, kwargs)])
    if written:
        return PinProof(name, pinned_to, False, written)
    files = list(user_files)
    try:
        with pins.pinned(fn, [name], {name: pinned_to}):
            program = export_program(fn, args, kwargs, user_files=files)
    except LensError as err:
        return PinProof(name, pinned_to, False,
                        f"the module does not export with it: {err.message.splitlines()[0]}")
    lowerer = ProgramLowerer(program, module_name=module_name, user_files=files)
    if not lowerer.lower("linalg").ok:
        return PinProof(name, pinned_to, False, "the module does not lower to Linalg with it")
    worst = 0.0
    for which, inputs in (("the example", args), ("a second input", other)):
        result = verify_lowerer(lowerer, fn, inputs, kwargs, locate=False)
        if not result.ok:
            return PinProof(name, pinned_to, False,
                            f"Verify on {which}: {result.message.removeprefix('✗ ')}")
        worst = max(worst, result.max_abs_err)
    return PinProof(name, pinned_to, True, max_err=worst)


__all__ = ["PinProof", "prove_pin", "second_inputs"]

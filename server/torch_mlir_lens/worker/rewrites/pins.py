"""A way past torch.export's refusal of a branch on a buffer: the buffer pinned to its value.

A quantizer's `if not self.initted:`, a solver's `if self.adaptive:`: a forward that branches
on a one-element buffer, parameter or tensor attribute it never writes computes the same
branch for every input. torch.export cannot know that (the tensor is a fake one while it
traces) and refuses the line. Pinned, the tensor is its Python value during the export (a
`bool`, `int` or `float`): the branch is decided, and the exported graph is specialised to
that value, as the offer says. Written as a rewrite of the module's comment,

    # torch-mlir-lens: rewrites=pin.vq.initted

(`pin.<the tensor's dotted name in the module>`), it is applied at export, before the
program exists, on every backend; `--rewrites auto` applies the ones proven
(worker/rewrite_jobs/pin_proof.py: the forward does not write the tensor, the module
exports and lowers, and Verify matches eager on the example and on a second input).

    is_pin(name) / pin_names(names)   → rewrite names that are pins, and their tensor names
    pinned(module, tensor_names)      → context: those tensors are Python values meanwhile
    pinnable(module, tensor_name)     → the value a tensor pins to, or why it cannot be
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from torch_mlir_lens.protocol.results import ErrorKind, LensError

PREFIX = "pin."


def is_pin(name: str) -> bool:
    """Whether a rewrite name is a pin (`pin.vq.initted`)."""
    return name.startswith(PREFIX) and len(name) > len(PREFIX)


def pin_names(names: Iterable[str]) -> list[str]:
    """The tensor names of the pins among rewrite names, in order."""
    return list(dict.fromkeys(n[len(PREFIX):] for n in names if is_pin(n)))


def _owner(module: torch.nn.Module, name: str) -> tuple[torch.nn.Module, str]:
    *path, attr = name.split(".")
    owner = module
    for part in path:
        child = getattr(owner, part, None)
        if not isinstance(child, torch.nn.Module):
            raise KeyError(name)
        owner = child
    return owner, attr


def pinnable(module: Any, name: str) -> tuple[bool | int | float | None, str]:
    """(the Python value `name` pins to, "") or (None, why it cannot be pinned)."""
    if not isinstance(module, torch.nn.Module):
        return None, "only a module's tensors can be pinned"
    try:
        owner, attr = _owner(module, name)
    except KeyError:
        return None, f"the module has no submodule on the way to `{name}`"
    value = getattr(owner, attr, None)
    if not isinstance(value, torch.Tensor):
        return None, f"`{name}` is not a tensor of the module"
    if value.is_meta or value.numel() != 1 or type(value).__name__ == "FakeTensor":
        return None, f"`{name}` is not a one-element tensor with a value"
    return value.detach().cpu().item(), ""


@contextlib.contextmanager
def pinned(module: Any, names: Iterable[str],
           values: dict[str, Any] | None = None) -> Iterator[None]:
    """Within the block, each tensor `names` names is its Python value (or `values[name]`),
    a plain attribute of its module; put back as it was (buffer, parameter, attribute)
    after. LensError("bad-inputs") for a name that cannot be pinned."""
    undo: list[tuple[torch.nn.Module, str, str, Any]] = []
    try:
        for name in names:
            value, why = pinnable(module, name)
            if value is None:
                raise LensError(ErrorKind.BAD_INPUTS, f"`pin.{name}`: {why}")
            if values and name in values:
                value = values[name]
            owner, attr = _owner(module, name)
            if attr in owner._buffers:
                undo.append((owner, attr, "buffer", owner._buffers.pop(attr)))
            elif attr in owner._parameters:
                undo.append((owner, attr, "parameter", owner._parameters.pop(attr)))
            else:
                undo.append((owner, attr, "attribute", vars(owner).get(attr)))
            object.__setattr__(owner, attr, value)
        yield
    finally:
        for owner, attr, kind, original in reversed(undo):
            vars(owner).pop(attr, None)
            if kind == "buffer":
                owner._buffers[attr] = original
            elif kind == "parameter":
                owner._parameters[attr] = original
            else:
                object.__setattr__(owner, attr, original)


__all__ = ["PREFIX", "is_pin", "pin_names", "pinnable", "pinned"]

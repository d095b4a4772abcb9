"""A module's Python state put back as it was after a run that may write to it.

A forward may keep tensors in its own attributes: LeViT's attention caches the bias table it
gathers in a dict, rotary embeddings grow their cos/sin tables on demand, some forwards assign
a buffer. The survey runs the whole forward on fake tensors and a block's trace runs one
block's forward under torch.export: what they write would stay in the model, and the next
export would find a fake tensor among the model's constants ("We found a fake tensor in the
exported program constant's list"). torch.export puts back only its root's attributes, and a
block traced as a function is not a submodule of that root.

Each module's own attributes, parameters, buffers and submodules are put back, each dict,
list or set among them in place (one level deep), so that whatever holds on to those containers
still sees the module's own; attributes added by the run are removed. The hooks and the
training flag, which forwards do not write, are left alone: the guard runs around every
survey, over every module of the model (1,045 for 80 Llama layers).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

# nn.Module's own bookkeeping, but for the tables a forward may write to.
_BOOKKEEPING = frozenset(vars(torch.nn.Module())) - {
    "_parameters", "_buffers", "_non_persistent_buffers_set", "_modules"}

# A value of these types is not a container put back in place (the common case, decided fast).
_PLAIN = (int, float, bool, str, type(None), torch.nn.Parameter, torch.Tensor)


def _contents(value: Any) -> Any:
    """A shallow copy of a container's items (None: not a container put back in place)."""
    if type(value) in _PLAIN:
        return None
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, set):
        return set(value)
    return None


def _put_back(value: Any, contents: Any) -> None:
    if isinstance(value, dict):
        value.clear()
        value.update(contents)
    elif isinstance(value, list):
        value[:] = contents
    else:
        value.clear()
        value.update(contents)


@contextlib.contextmanager
def state_kept(root: torch.nn.Module) -> Iterator[None]:
    """Run the body, then give `root` and each of its submodules back the attributes they
    had before it (attributes added by the body are removed)."""
    saved: list[tuple[torch.nn.Module, dict[str, tuple[Any, Any]]]] = [
        (module, {name: (value, _contents(value)) for name, value in vars(module).items()
                  if name not in _BOOKKEEPING})
        for module in root.modules()]
    try:
        yield
    finally:
        for module, attributes in saved:
            state = vars(module)
            for name in [n for n in state if n not in attributes and n not in _BOOKKEEPING]:
                del state[name]
            for name, (value, contents) in attributes.items():
                state[name] = value
                if contents is not None:
                    _put_back(value, contents)


__all__ = ["state_kept"]

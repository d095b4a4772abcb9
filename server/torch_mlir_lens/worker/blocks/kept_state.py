"""A module's Python state put back as it was after a run that may write to it.

A forward may keep tensors in its own attributes: LeViT's attention caches the bias table it
gathers in a dict, rotary embeddings grow their cos/sin tables on demand, some forwards assign
a buffer. The survey runs the whole forward on fake tensors and a block's trace runs one
block's forward under torch.export: what they write would stay in the model, and the next
export would find a fake tensor among the model's constants ("We found a fake tensor in the
exported program constant's list"). torch.export puts back only its root's attributes, and a
block traced as a function is not a submodule of that root.

Each module's `__dict__` is put back, and each dict, list or set in it is put back in place
(one level deep), so that objects holding on to those containers (hook handles hold the hooks'
dicts) still see the module's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch


def _contents(value: Any) -> Any:
    """A shallow copy of a container's items (None: not a container put back in place)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    if isinstance(value, set):
        return set(value)
    return None


def _put_back(value: Any, contents: Any) -> None:
    if contents is None:
        return
    if isinstance(value, dict):
        value.clear()
        value.update(contents)
    elif isinstance(value, list):
        value[:] = contents
    elif isinstance(value, set):
        value.clear()
        value.update(contents)


@contextlib.contextmanager
def state_kept(root: torch.nn.Module) -> Iterator[None]:
    """Run the body, then give `root` and each of its submodules back the attributes they
    had before it (attributes added by the body are removed)."""
    saved: list[tuple[torch.nn.Module, dict[str, tuple[Any, Any]]]] = [
        (module, {name: (value, _contents(value)) for name, value in vars(module).items()})
        for module in root.modules()]
    try:
        yield
    finally:
        for module, attributes in saved:
            state = vars(module)
            for name in [n for n in state if n not in attributes]:
                del state[name]
            for name, (value, contents) in attributes.items():
                state[name] = value
                _put_back(value, contents)


__all__ = ["state_kept"]

"""A model's Python state put back as it was after a run of its forward that may write to it.

A forward may keep tensors in its own attributes: LeViT's attention caches the bias table it
gathers in a dict, rotary embeddings grow their cos/sin tables on demand, some forwards assign
a buffer. The worker runs forwards before the export that lowers them: the blocks' survey (the
whole model on fake tensors), a block traced as a function, the parent run that records a
submodule's inputs. What they write would stay in the model: the next export would find a fake
tensor among the model's constants ("We found a fake tensor in the exported program constant's
list"), or a cached value where the file computes one. torch.export puts back only its own
root's attributes.

Each module's own attributes, parameters, buffers and submodules are put back, and each plain
dict, list or set among them in place (one level deep), so that whatever holds on to those
containers still sees the module's own; attributes added by the run are removed. The hook
tables, which forwards do not write, are left alone: the guard runs around every survey, over
every module of the model (1,045 for 80 Llama layers). `buffer_values_kept` puts back the
values a forward writes into its buffers in place, `values_kept` both.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict, defaultdict
from collections.abc import Iterator
from typing import Any

import torch

# nn.Module's own bookkeeping (its hook tables), but for what a forward may write to.
_BOOKKEEPING = frozenset(vars(torch.nn.Module())) - {
    "_parameters", "_buffers", "_non_persistent_buffers_set", "_modules", "training"}

# The containers put back in place, by exact type → how their items are copied. A subclass
# may refuse to be cleared (transformers' ModelOutput): it is put back as an object only.
_COPY: dict[type, Any] = {dict: dict, OrderedDict: dict, defaultdict: dict, list: list,
                          set: set}


def _put_back(value: Any, items: Any) -> None:
    if isinstance(value, list):
        value[:] = items
    else:
        value.clear()
        value.update(items)


@contextlib.contextmanager
def state_kept(root: torch.nn.Module) -> Iterator[None]:
    """Run the body, then give `root` and each of its submodules back the attributes they
    had before it (attributes added by the body are removed)."""
    saved: list[tuple[torch.nn.Module, dict[str, tuple[Any, Any]]]] = []
    for module in root.modules():
        attributes = {}
        for name, value in vars(module).items():
            if name not in _BOOKKEEPING:
                copy = _COPY.get(type(value))
                attributes[name] = (value, None if copy is None else copy(value))
        saved.append((module, attributes))
    try:
        yield
    finally:
        for module, attributes in saved:
            state = vars(module)
            for name in [n for n in state if n not in attributes and n not in _BOOKKEEPING]:
                del state[name]
            for name, (value, items) in attributes.items():
                state[name] = value
                if items is not None:
                    _put_back(value, items)


@contextlib.contextmanager
def buffer_values_kept(module: Any, *, max_elements: int | None = None) -> Iterator[None]:
    """Run the body, then copy back into `module`'s buffers the values they had before it (a
    forward may write them in place; anything but a module has none). `max_elements`: larger
    buffers are neither saved nor put back (the cost of a copy bounded)."""
    saved = [(b, b.detach().clone()) for b in module.buffers()
             if not b.is_meta and (max_elements is None or b.numel() <= max_elements)] \
        if isinstance(module, torch.nn.Module) else []
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, value in saved:
                if buffer.shape == value.shape:
                    buffer.copy_(value)


@contextlib.contextmanager
def values_kept(module: Any) -> Iterator[None]:
    """Both: the module's Python state (`state_kept`) and its buffers' values, as they were
    before the body (a proof's eager runs, draft_export's run on real values)."""
    with buffer_values_kept(module):
        if isinstance(module, torch.nn.Module):
            with state_kept(module):
                yield
        else:
            yield


__all__ = ["buffer_values_kept", "state_kept", "values_kept"]

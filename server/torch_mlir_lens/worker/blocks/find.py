"""Which submodules may be repeated blocks: siblings of one class in a container.

A model repeats a block by keeping instances of one class in an `nn.ModuleList` (iterated in
`forward`), an `nn.Sequential` or an `nn.ModuleDict`. Such a child is a candidate when the
container holds at least one other child of its class; whether two calls of candidates are
the same computation is for the recording (`record.py`) to prove, not for this to assume.
Only the outermost candidates count: a repeated block inside a repeated block (the experts of
each layer) is part of its block's function.
"""

from __future__ import annotations

from collections import Counter

import torch

_CONTAINERS = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict)


def candidate_blocks(root: torch.nn.Module) -> dict[int, str]:
    """id(submodule) → its path in `root`, for each outermost candidate block."""
    found: dict[int, str] = {}
    for path, container in root.named_modules(remove_duplicate=False):
        if not isinstance(container, _CONTAINERS):
            continue
        children = list(container.named_children())
        classes = Counter(type(child) for _name, child in children)
        for name, child in children:
            if classes[type(child)] >= 2 and not isinstance(child, _CONTAINERS):
                found.setdefault(id(child), f"{path}.{name}" if path else name)
    return _outermost(root, found)


def _outermost(root: torch.nn.Module, found: dict[int, str]) -> dict[int, str]:
    """Drop the candidates that sit inside another candidate."""
    inner: set[int] = set()
    for module in root.modules():
        if id(module) in found:
            inner.update(id(sub) for sub in module.modules()
                         if sub is not module and id(sub) in found)
    return {key: path for key, path in found.items() if key not in inner}

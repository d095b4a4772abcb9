"""What a block's forward reads of its modules' state, and a call's key under those reads.

A block's forward is Python: what it computes depends on its inputs, on the code, and on the
attributes of its modules it reads (`self.sliding_window`, `self.layer_idx % 2`, the weights'
shapes, which submodules a ModuleList holds). While one call runs, `watching` records every
attribute read of every module of the block, by path and name; `state_key` then hashes the
values of exactly those attributes (with the inputs' types): a later call of a block of the
same class whose key is equal reads the same values where the recorded one read, and so takes
the same path (the reasoning of torch.compile's guards). An attribute its forward never read
(a `layer_idx` kept only for a cache) does not split the blocks.

Reads are seen by swapping each module's class for a subclass that notes every attribute
access while the call runs, and back afterwards; a class that cannot be swapped (a custom
metaclass, a scripted module) gives no read set, and its calls are then each recorded.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torch_mlir_lens.worker.blocks.record import TensorMeta, _plain
from torch_mlir_lens.worker.process import WORKER

Reads = dict[tuple[str, str], None]  # (module path in the block, attribute name), in order

_MISSING = ("missing",)


@dataclass
class _Watch:
    """The watching subclasses made so far and the watches running (the worker's part)."""

    watched: dict[type, type] = field(default_factory=dict)  # class → its watching subclass
    originals: dict[type, type] = field(default_factory=dict)  # watching subclass → class
    # (id(module) → path, reads) of each watch running, innermost last
    active: list[tuple[dict[int, str], Reads]] = field(default_factory=list)


def _watch() -> _Watch:
    return WORKER.part(_Watch)


def _watching_class(cls: type) -> type:
    """The subclass of `cls` that notes attribute reads while a watch is active."""
    watch = _watch()
    known = watch.watched.get(cls)
    if known is not None:
        return known

    base_lookup: Any = cls.__getattribute__
    active = watch.active  # bound once: every attribute read of a watched module comes here

    def __getattribute__(self: Any, name: str) -> Any:
        if active and not name.startswith("__"):
            paths, reads = active[-1]
            path = paths.get(id(self))
            if path is not None:
                reads[(path, name)] = None
        return base_lookup(self, name)

    namespace = {"__getattribute__": __getattribute__, "__module__": cls.__module__,
                 "__qualname__": cls.__qualname__}
    made = types.new_class(cls.__name__, (cls,), {}, lambda ns: ns.update(namespace))
    watch.watched[cls], watch.originals[made] = made, cls
    return made


@contextlib.contextmanager
def watching(block: torch.nn.Module) -> Iterator[Reads | None]:
    """Note the attributes the block's modules are read while the body runs; yields the
    reads (filled as it runs), or None when the modules cannot be watched."""
    paths: dict[int, str] = {}
    for path, module in block.named_modules(remove_duplicate=False):
        paths.setdefault(id(module), path)
    modules = list({id(m): m for m in block.modules()}.values())
    swapped: list[tuple[torch.nn.Module, type]] = []
    try:
        for module in modules:
            cls = type(module)
            if isinstance(module, torch.jit.ScriptModule):
                raise TypeError("a scripted module")
            module.__class__ = _watching_class(cls)
            swapped.append((module, cls))
    except TypeError:
        for module, cls in swapped:
            module.__class__ = cls
        yield None
        return
    reads: Reads = {}
    active = _watch().active
    active.append((paths, reads))
    try:
        yield reads
    finally:
        active.pop()
        for module, cls in swapped:
            module.__class__ = cls


def _state_value(value: Any, depth: int = 0) -> Any:
    """A read attribute's value as data two blocks can be compared by."""
    if depth > 8:
        return ("deep", id(value))
    if isinstance(value, torch.Tensor):
        return ("tensor", TensorMeta.of(value))
    if isinstance(value, torch.nn.Module):
        cls = type(value)
        return ("module", _watch().originals.get(cls, cls))
    if isinstance(value, types.MethodType):
        return ("method", id(value.__func__))  # the same function, whichever block it is bound to
    if isinstance(value, dict):
        return ("dict", tuple((_plain(k), _state_value(v, depth + 1)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_state_value(v, depth + 1) for v in value))
    if isinstance(value, set | frozenset):
        return ("set", tuple(sorted(repr(_plain(v)) for v in value)))
    return _plain(value)


def _hook_value(value: Any) -> Any:
    """A module's hook table by its hooks alone (its keys are handles, unique per module)."""
    if isinstance(value, dict):
        return ("hooks", tuple(_state_value(v) for v in value.values()))
    return _state_value(value)


def attribute_key(name: str, value: Any) -> Any:
    """A module attribute's value as data two modules can be compared by (hook tables by
    their hooks, tensors by type, modules by class)."""
    return _hook_value(value) if "hook" in name else _state_value(value)


def original_class(cls: type) -> type:
    """The class itself, for a module whose class is watched at the moment."""
    return _watch().originals.get(cls, cls)


def _submodule(block: torch.nn.Module, path: str, found: dict[str, Any]) -> Any:
    """The module at `path` in `block` ("" is the block itself), or None."""
    if path in found:
        return found[path]
    parent, _, name = path.rpartition(".")
    above = _submodule(block, parent, found) if path else block
    module = None if above is None or not path else above._modules.get(name)
    found[path] = module if path else block
    return found[path]


def state_key(block: torch.nn.Module, reads: Reads, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """The key of a call of `block` (a tuple, compared exactly): its class, its inputs' types
    and plain values, and the values of the attributes in `reads`; None when one of them
    names a missing module."""
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    cls = type(block)
    parts: list[Any] = [
        _watch().originals.get(cls, cls), spec,
        tuple(TensorMeta.of(v) if isinstance(v, torch.Tensor) else _plain(v) for v in leaves),
        tuple(next(j for j, u in enumerate(tensors) if u is t) for t in tensors),
    ]
    found: dict[str, Any] = {}
    for path, name in reads:
        module = _submodule(block, path, found)
        if module is None:
            return None
        try:
            value = getattr(module, name)
        except AttributeError:
            parts.append((path, name, _MISSING))
            continue
        read = _hook_value(value) if "hook" in name else _state_value(value)
        parts.append((path, name, read))
    return tuple(parts)


__all__ = ["Reads", "attribute_key", "original_class", "state_key", "watching"]

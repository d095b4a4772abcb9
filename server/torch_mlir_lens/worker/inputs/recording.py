"""Record what a parent's submodules receive: one eager forward pass with pre-hooks.

The parent is built with its user classes' constructors watched (their arguments recorded too)
and run once; the first call of each user class wins. When the job elides weights and the
parent is big, it is built and run without them (fake tensors) and the recorded tensors become
zeros of their shapes: lowering needs shapes, not values.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.worker.inputs.construction import construct_module, lookup, user_line
from torch_mlir_lens.worker.inputs.result import ResolvedInputs
from torch_mlir_lens.worker.loading import construct, memo_caches
from torch_mlir_lens.worker.loading.kept_state import state_kept


@dataclass
class Recorded:
    """What one user class received at its first call inside the parent."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    init: tuple[tuple[Any, ...], dict[str, Any]] | None
    instance: Any  # kept only when the constructor arguments are unknown
    file: str | None  # the file defining the recorded class (same name in two files)
    shapes_only: bool = False  # recorded in a parent built without weights: zeros, right shapes


# Set while resolving for a job that elides weights (the construction policy, "auto" or
# "meta"): a parent recorded for derived inputs is then built and run without its weights
# (fake tensors: shapes only); with "auto" only when they are big.
_WITHOUT_WEIGHTS: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "torch_mlir_lens_without_weights", default=None)


@contextlib.contextmanager
def recording_without_weights(policy: str | None = "auto") -> Iterator[None]:
    """Within: derived inputs may be recorded in a parent built without its weights
    (`policy` "auto": when they are big; "meta": always; None: never)."""
    token = _WITHOUT_WEIGHTS.set(policy)
    try:
        yield
    finally:
        _WITHOUT_WEIGHTS.reset(token)


def weights_policy() -> str | None:
    """The policy `recording_without_weights` set ("auto", "meta"), or None."""
    return _WITHOUT_WEIGHTS.get()


def _user_classes(mod: types.ModuleType) -> list[type]:
    """nn.Module classes reachable from the user's module: its own, nested ones, imported ones
    and the classes of the modules those come from (blocks a sibling's block uses)."""
    found: list[type] = []
    seen_modules: set[str] = {mod.__name__}

    def visit(obj: Any) -> None:
        if (isinstance(obj, type) and issubclass(obj, torch.nn.Module) and obj not in found
                and obj.__module__.split(".")[0] != "torch"):
            found.append(obj)
            for inner in list(vars(obj).values()):
                visit(inner)
            home = sys.modules.get(obj.__module__)
            if home is not None and obj.__module__ not in seen_modules:
                seen_modules.add(obj.__module__)
                for value in list(vars(home).values()):
                    visit(value)

    for value in list(vars(mod).values()):
        visit(value)
    return found


def record(mod: types.ModuleType, parent: str, resolved: ResolvedInputs,
           path: str) -> dict[str, Recorded]:
    """What `parent`'s submodules receive: without its weights when allowed and they are big
    (shapes are what lowering needs), else (or when that fails) with them."""
    if _WITHOUT_WEIGHTS.get():
        try:  # what a library memoised on meta tensors is forgotten after it
            with memo_caches.watching():
                calls = _record_once(mod, parent, resolved, path, construct.new_fake_mode())
        except Exception:  # anything the fake run cannot do: record with real weights
            calls = None
        if calls is not None:
            return calls
    recorded = _record_once(mod, parent, resolved, path, None)
    assert recorded is not None
    return recorded


def _record_once(mod: types.ModuleType, parent: str, resolved: ResolvedInputs, path: str,
                 fake_mode: Any) -> dict[str, Recorded] | None:
    """Build `parent` (constructors watched) and run it once with pre-hooks on user classes.

    With `fake_mode`, both happen under it (no weights, no arithmetic) and the recorded tensors
    become zeros of their shapes; None if the parent is too small for that to pay.
    """
    classes = _user_classes(mod)
    inits: dict[int, tuple[tuple[Any, ...], dict[str, Any]]] = {}
    within = fake_mode if fake_mode is not None else contextlib.nullcontext()
    restore = _watch_constructors(classes, inits)
    try:
        with torch.device("meta") if fake_mode is not None else contextlib.nullcontext():
            model = construct_module(lookup(mod, parent), parent, resolved.init_args,
                                     resolved.init_kwargs, None, path, "init")
    finally:
        restore()
    if fake_mode is not None:
        construct.to_fake(model, fake_mode)
    if (fake_mode is not None and _WITHOUT_WEIGHTS.get() == "auto"
            and construct.weight_bytes(model) < construct.META_OVER_BYTES):
        return None
    model.eval()
    calls: dict[str, Recorded] = {}
    keep = clone if fake_mode is None else (lambda value: value)

    def hook(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        name = type(module).__qualname__
        if name not in calls:
            init = inits.get(id(module))
            home = sys.modules.get(type(module).__module__)
            calls[name] = Recorded(keep(args), keep(kwargs), init,
                                    module if init is None else None,
                                    getattr(home, "__file__", None), fake_mode is not None)

    handles = [
        m.register_forward_pre_hook(hook, with_kwargs=True)
        for m in model.modules() if type(m) in classes and m is not model
    ]
    try:
        # A submodule kept as it was recorded (one not built by its constructor) is lowered
        # as the file made it, not with what this run cached in it.
        with torch.no_grad(), within, state_kept(model):
            model(*resolved.args, **resolved.kwargs)
    except Exception as exc:
        raise LensError(
            ErrorKind.BAD_INPUTS,
            f"running {parent} to record its submodules' inputs failed: "
            f"{type(exc).__name__}: {exc}", file=path, line=user_line(exc, path),
        ) from None
    finally:
        for h in handles:
            h.remove()
    if fake_mode is not None:  # outside the mode: real zeros of the recorded shapes
        for rec in calls.values():
            rec.args, rec.kwargs = construct.zeros_for(rec.args), construct.zeros_for(rec.kwargs)
    return calls


def _watch_constructors(
    classes: list[type], inits: dict[int, tuple[tuple[Any, ...], dict[str, Any]]],
) -> Callable[[], None]:
    """Wrap each class's own `__init__` to record its arguments; returns the undo."""
    originals: list[tuple[type, Any]] = []
    for cls in classes:
        original = cls.__dict__.get("__init__")
        if original is None:
            continue
        cls.__init__ = _recording_init(cls, original, inits)  # type: ignore[misc]
        originals.append((cls, original))

    def restore() -> None:
        for cls, original in originals:
            cls.__init__ = original  # type: ignore[misc]

    return restore


def _recording_init(cls: type, original: Any,
                    inits: dict[int, tuple[tuple[Any, ...], dict[str, Any]]]) -> Any:
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if type(self) is cls:
            inits.setdefault(id(self), (args, dict(kwargs)))
        original(self, *args, **kwargs)

    return __init__


def clone(value: Any) -> Any:
    """Detached copies of the tensors in nested tuples/lists/dicts (later in-place ops of the
    parent's forward must not change what was recorded)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, tuple):
        return tuple(clone(v) for v in value)
    if isinstance(value, list):
        return [clone(v) for v in value]
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    return value

"""Build the module to lower: without its weights when nothing needs their values.

The IR view elides weights, `lower` and `check` never run them: for those the module is built
under a `FakeTensorMode`, so its parameters and buffers have shapes and dtypes and no memory
(a 1 B-parameter model builds in a fraction of a second in a few MB), and exported from that.
The FX importer then makes `dense_resource`s without data (`literals.py`).

Real construction, as before, when:
- the job needs values: `verify`, `export`, `repro`, `--keep-weights` (reason "weights needed");
- the module is small (under `META_OVER_BYTES` of parameters and buffers): building it is
  cheap, and its small constants keep their printed values;
- the inputs' resolution already built an instance (conventions, inference, a recorded one);
- building or exporting without weights fails (an `__init__` that reads weights, a value a
  trace needs: `.item()`, `.tolist()` on a buffer, ...), or the module has one-element
  weights (printed inline by value): the fallback, with the failure as the reason. The real
  attempt then reports its own errors, as it always did.

`Construction.stats()` goes into each result's stats, so users and tests see which path was
taken and why.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._pytree import tree_map

from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.loading import memo_caches

# Parameters + buffers at or above this many bytes: build without them (policy "auto").
META_OVER_BYTES = 8 * 2**20
POLICIES = ("auto", "meta", "real")

META = "meta"
REAL = "real"


@dataclass
class Construction:
    """Which way the module was built, and why."""

    fn: Any  # the module instance (or function) that was exported
    path: str  # META or REAL
    reason: str
    weight_bytes: int | None = None

    def stats(self) -> dict[str, Any]:
        """Keys added to a LowerResult's stats."""
        out: dict[str, Any] = {"construction": self.path, "construction_reason": self.reason}
        if self.weight_bytes is not None:
            out["weight_bytes"] = self.weight_bytes
        return out


def is_fake_module(module: Any) -> bool:
    """True for a module whose parameters/buffers are fake (built by `build_fake`)."""
    if not isinstance(module, torch.nn.Module):
        return False
    first: torch.Tensor | None = next(iter(module.parameters()), None)
    if first is None:
        first = next(iter(module.buffers()), None)
    return isinstance(first, FakeTensor)


def weight_bytes(module: torch.nn.Module) -> int:
    """Bytes of the module's parameters and buffers (shared ones once)."""
    seen: set[int] = set()
    total = 0
    for t in [*module.parameters(), *module.buffers()]:
        if id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total


def new_fake_mode() -> FakeTensorMode:
    """A fake mode for one build; real tensors the user's code mixes in are accepted."""
    return FakeTensorMode(allow_non_fake_inputs=True)


def build_fake(obj: type, init_args: tuple[Any, ...], init_kwargs: dict[str, Any],
               mode: FakeTensorMode | None = None) -> Any:
    """`obj(*init_args, **init_kwargs)` without weights; raises what the constructor raises.

    Built on the meta device (every tensor the constructor makes without naming a device has
    a shape and no memory; `.to(dtype)`, `.half()` work), then its meta tensors become fake
    CPU tensors of `mode` (a new one by default), which export takes like real ones.
    """
    with torch.device("meta"), _initializers_skipped():
        instance = obj(*init_args, **init_kwargs)
    if isinstance(instance, torch.nn.Module):
        to_fake(instance, mode or new_fake_mode())
        instance.eval()
    return instance


@contextlib.contextmanager
def _initializers_skipped() -> Iterator[None]:
    """`torch.nn.init`'s in-place initializers return a meta tensor untouched for a while:
    it has no values to set, and their Python work is most of a deep model's construction
    (80 Llama layers: 0.07 s of 0.1 s). Other tensors are initialized as always."""
    saved: dict[str, Callable[..., Any]] = {}
    for name in dir(torch.nn.init):
        function = getattr(torch.nn.init, name)
        if name.endswith("_") and not name.startswith("_") and callable(function):
            saved[name] = function
            setattr(torch.nn.init, name, _skipped_on_meta(function))
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(torch.nn.init, name, function)


def _skipped_on_meta(function: Callable[..., Any]) -> Callable[..., Any]:
    def initialize(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(tensor, torch.Tensor) and tensor.is_meta:
            return tensor
        return function(tensor, *args, **kwargs)

    return initialize


def to_fake(module: torch.nn.Module, mode: FakeTensorMode) -> None:
    """Replace the meta parameters, buffers and tensor attributes of `module` (and its
    submodules) by fake CPU tensors of `mode`, in place; shared tensors stay shared."""
    cpu = torch.device("cpu")
    # id(meta tensor) → (that tensor, its replacement); holding the original keeps its id.
    made: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def fake(t: torch.Tensor) -> torch.Tensor:
        hit = made.get(id(t))
        if hit is not None:
            return hit[1]
        out: torch.Tensor = mode.fake_tensor_converter.from_meta_and_device(
            mode, t.detach(), cpu)
        if isinstance(t, torch.nn.Parameter):
            # What torch.nn.Parameter(fake) does to a tensor subclass, without its detach:
            # `out` is fresh (0.1 ms a weight, 0.07 s for the 723 of a 70 B-parameter model).
            out.requires_grad_(t.requires_grad)
            out._is_param = True  # type: ignore[attr-defined]
        made[id(t)] = (t, out)
        return out

    for sub in module.modules():
        for name, param in list(sub._parameters.items()):
            if param is not None and param.is_meta:
                sub._parameters[name] = fake(param)  # type: ignore[assignment]
        for name, buf in list(sub._buffers.items()):
            if buf is not None and buf.is_meta:
                sub._buffers[name] = fake(buf)
        for name, value in list(vars(sub).items()):
            if isinstance(value, torch.Tensor) and value.is_meta:
                object.__setattr__(sub, name, fake(value))


def zeros_for(value: Any) -> Any:
    """`value` with each fake tensor replaced by real zeros of its shape and dtype (call it
    outside any fake mode): inputs recorded in a parent built without weights."""
    def one(leaf: Any) -> Any:
        if isinstance(leaf, FakeTensor):
            return torch.zeros(tuple(leaf.shape), dtype=leaf.dtype)
        return leaf

    return tree_map(one, value)


def _first_line(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, LensError) else str(exc)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(first) > 200:
        first = first[:197] + "..."
    name = "" if isinstance(exc, LensError) else f"{type(exc).__name__}: "
    return f"{name}{first}"


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 1024:.1f} KB"


def construct_and_export(
    obj: Any,
    resolved: Any,
    *,
    build_real: Callable[[], Any],
    export: Callable[[Any], Any],
    need_weights: str | None,
    policy: str = "auto",
) -> tuple[Any, Construction]:
    """Build the module (without weights when allowed and worthwhile) and export it.

    `resolved` is the inputs' `ResolvedInputs`; `build_real()` builds the module with its
    weights (`inputs.instantiate`); `export(fn)` exports it (raising LensError). `need_weights`
    names what needs real values ("verify", "export", ...), or None. Returns (program,
    construction); a failure of the real path raises as before.
    """
    if policy not in POLICIES:
        policy = "auto"

    def real(reason: str) -> tuple[Any, Construction]:
        fn = build_real()
        size = weight_bytes(fn) if isinstance(fn, torch.nn.Module) else None
        with memo_caches.watching():  # the export's forward runs on fake tensors
            program = export(fn)
        return program, Construction(fn, REAL, reason, size)

    if not isinstance(obj, type):
        return real("a function: nothing to build")
    if need_weights:
        return real(f"weights needed ({need_weights})")
    given = resolved.instance
    if given is not None and not is_fake_module(given):
        return real(f"built while resolving its inputs ({resolved.source})")
    if policy == REAL:
        return real("asked for real weights")

    # What the library memoises while the module is built and traced without values (a
    # meta tensor from a cached helper) is forgotten before anything is built for real.
    fake = given
    if fake is None:
        try:
            with memo_caches.watching():
                fake = build_fake(obj, resolved.init_args, resolved.init_kwargs)
        except Exception as exc:  # the user's __init__ can raise anything under fake tensors
            return real(f"fallback: building without weights failed: {_first_line(exc)}")
    size = weight_bytes(fake) if isinstance(fake, torch.nn.Module) else 0
    if policy == "auto" and given is None and size < META_OVER_BYTES:
        return real(f"small module ({_mb(size)} of weights): built with them")
    try:
        with memo_caches.watching():
            program = export(fake)
    except LensError as err:
        return real(f"fallback: export without weights failed: {_first_line(err)}")
    scalars = _valueless_scalars(program)
    if scalars:
        return real(f"fallback: one-element weights need their values ({', '.join(scalars)})")
    return program, Construction(fake, META, f"{_mb(size)} of weights never built", size)


def _valueless_scalars(program: Any) -> list[str]:
    """Names of the program's fake tensors with fewer than 2 elements (at most 3 named).

    torch-mlir prints one-element weights inline (`dense<2.0>`), and a one-element resource
    without data sends MLIR's folders into an endless stream of errors: such modules need
    their real values.
    """
    found = []
    for source in (program.state_dict, getattr(program, "constants", {}) or {}):
        for name, value in source.items():
            if isinstance(value, FakeTensor) and value.numel() < 2:
                found.append(str(name))
    return found[:3]


__all__ = [
    "META",
    "META_OVER_BYTES",
    "POLICIES",
    "REAL",
    "Construction",
    "build_fake",
    "construct_and_export",
    "is_fake_module",
    "new_fake_mode",
    "to_fake",
    "weight_bytes",
    "zeros_for",
]

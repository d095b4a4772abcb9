"""The parent's export with each stitched block call standing in as one opaque op.

While the parent is exported, each block of a group gets a forward that calls
`torch_mlir_lens_blocks::call_<inputs>_<results>(group, site, tensors...)`: a custom op
torch.export keeps as one node, whose fake kernel gives the recorded output types (so the
block's ops are never traced). torch-mlir imports it as
`torch.operator "torch.torch_mlir_lens_blocks.call_..."`, which `stitch.py` turns into a call
of the group's function; the site's number says which block it is, whose weights `stitch.py`
then adds to the call as literals.

The blocks' weights are kept out of the parent's export (their modules' parameter and buffer
tables are emptied while it runs): torch.export lifts every parameter of the module it is
given, and hundreds of them (80 layers × 9) cost it seconds in bookkeeping that grows with
their square. A parent whose own code reads a block's weight then fails to export, and is
lowered inline. The op's CPU kernel runs the group's exported function on the block's
weights, so the stitched program also runs eagerly, node by node (as Verify's search for a
diverging line does).

A chain of calls (`prove.Chain`) is one op for the whole run:
`torch_mlir_lens_blocks::chain_<inputs>(group, site, count, carried, tensors...)`, made by the
chain's first block; the later blocks of the chain, handed its result, pass it on unchanged
(each checks that it gets exactly the tensors the survey saw, else the export stops with
`ChainBroken` and is made again without chains). The parent's export then costs the same for
8 layers or 80.

A call of a stubbed block whose inputs the survey did not see (another type, another plain
value) stops the export (`UnplannedCall`; its weights are out of sight, it cannot run): the
module is then lowered inline.

The ops are defined once per (inputs, results) count and live as long as the process; a
group's number is unique in the process, and its entry (`GroupKernel`) lives as long as the
program that holds it.
"""

from __future__ import annotations

import contextlib
import itertools
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree

from torch_mlir_lens.worker.blocks.record import (
    BlockCall,
    TensorMeta,
    attribute,
    call_key,
    rebuild_output,
)
from torch_mlir_lens.worker.process import WORKER

NAMESPACE = "torch_mlir_lens_blocks"
IMPORTED_PREFIX = f"torch.{NAMESPACE}."  # the name torch-mlir gives an unknown op



@dataclass
class _Ops:
    """The stub ops' library and the live group kernels (the worker's part)."""

    library: torch.library.Library | None = None
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))  # groups'
    sites: Iterator[int] = field(default_factory=lambda: itertools.count(1))  # call sites'
    kernels: weakref.WeakValueDictionary[int, GroupKernel] = field(
        default_factory=weakref.WeakValueDictionary)


def _ops() -> _Ops:
    return WORKER.part(_Ops)


@dataclass(eq=False)
class GroupKernel:
    """What the op does for one group: its results' types, the block's function, and the
    blocks it is called at (site number → the block and its weights' names)."""

    number: int
    out_metas: list[TensorMeta]
    run: Callable[..., Any] | None = None  # the exported block function, once traced
    sites: dict[int, tuple[torch.nn.Module, list[str]]] = field(default_factory=dict)
    paths: dict[int, str] = field(default_factory=dict)  # id(block) → its path in the model

    def weights(self, site: int) -> list[torch.Tensor]:
        """The weights of the block called at `site`, in the function's order."""
        module, names = self.sites[site]
        return [attribute(module, name) for name in names]

    def weight_names(self, site: int) -> list[str]:
        """Their names in the model ("layers.3.attn.q_proj.weight")."""
        module, names = self.sites[site]
        path = self.paths.get(id(module), "")
        return [f"{path}.{name}" if path else name for name in names]


def new_kernel(out_metas: list[TensorMeta]) -> GroupKernel:
    """A group's entry, under a number unique in the process."""
    ops = _ops()
    kernel = GroupKernel(next(ops.numbers), list(out_metas))
    ops.kernels[kernel.number] = kernel
    return kernel


def _kernel(number: int) -> GroupKernel:
    kernel = _ops().kernels.get(number)
    if kernel is None:
        raise RuntimeError(f"no stitched block group {number} in this process")
    return kernel


def _fake(number: int, site: int, *tensors: torch.Tensor) -> Any:
    kernel = _kernel(number)
    device = tensors[0].device if tensors else torch.device("cpu")
    outs = [torch.empty_strided(m.shape, m.stride, dtype=m.dtype, device=device)
            for m in kernel.out_metas]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _eager(number: int, site: int, *tensors: torch.Tensor) -> Any:
    kernel = _kernel(number)
    if kernel.run is None:
        raise RuntimeError(f"stitched block group {number} has no function to run")
    outs = kernel.run(*tensors, *kernel.weights(site))
    outs = list(outs) if isinstance(outs, tuple | list) else [outs]
    return outs[0] if len(outs) == 1 else tuple(outs)


def _chain_fake(number: int, site: int, count: int, carried: int,
                *tensors: torch.Tensor) -> Any:
    return _fake(number, site, *tensors)


def _chain_eager(number: int, site: int, count: int, carried: int,
                 *tensors: torch.Tensor) -> Any:
    kernel = _kernel(number)
    if kernel.run is None:
        raise RuntimeError(f"stitched block group {number} has no function to run")
    inputs = list(tensors)
    out: Any = None
    for i in range(count):
        out = kernel.run(*inputs, *kernel.weights(site + i))
        out = out[0] if isinstance(out, tuple | list) else out
        inputs[carried] = out
    return out


def chain_op_for(inputs: int) -> Any:
    """The op running a chain: group, first site, count, carried position, `inputs` tensors."""
    name = f"chain_{inputs}"
    if not _defined(name):
        library = _library_defined()
        params = ", ".join(f"Tensor t{i}" for i in range(inputs))
        library.define(f"{name}(int group, int site, int count, int carried, {params}) -> Tensor")
        torch.library.register_fake(f"{NAMESPACE}::{name}", _chain_fake, lib=library)
        library.impl(name, _chain_eager, "CompositeExplicitAutograd")
    return getattr(getattr(torch.ops, NAMESPACE), name).default


def _defined(name: str) -> bool:
    """Whether torch knows the op (asked of torch's registry, which outlives any worker part)."""
    return hasattr(getattr(torch.ops, NAMESPACE), name)


def _library_defined() -> torch.library.Library:
    ops = _ops()
    if ops.library is None:
        ops.library = torch.library.Library(NAMESPACE, "FRAGMENT")
    return ops.library


def op_for(inputs: int, results: int) -> Any:
    """The op taking a group and a site number and `inputs` tensors, returning `results`
    tensors."""
    name = f"call_{inputs}_{results}"
    if not _defined(name):
        library = _library_defined()
        params = ", ".join(f"Tensor t{i}" for i in range(inputs))
        returns = "Tensor" if results == 1 else "(" + ", ".join(["Tensor"] * results) + ")"
        library.define(f"{name}(int group, int site, {params}) -> {returns}")
        torch.library.register_fake(f"{NAMESPACE}::{name}", _fake, lib=library)
        library.impl(name, _eager, "CompositeExplicitAutograd")
    return getattr(getattr(torch.ops, NAMESPACE), name).default


@dataclass
class StubbedCall:
    """What a block's stub needs of its group: the op, its kernel, the recorded call."""

    kernel: GroupKernel
    call: BlockCall  # the group's representative: outputs and weights, by name


@dataclass(eq=False)
class ChainPlan:
    """A chain as its stubs make it: the blocks in order, and, while the export runs, the
    tensors the later blocks must be handed (the chain's result, the shared inputs)."""

    kernel: GroupKernel
    call: BlockCall  # the group's representative
    modules: list[torch.nn.Module]
    carried: int
    expected: list[Any] | None = None  # the tensors the next block must get
    position: int = 0  # the blocks of the chain called so far


@dataclass
class InChain:
    """One block's place in a chain."""

    chain: ChainPlan
    index: int


class ChainBroken(Exception):
    """A chain's later block did not get what the survey saw (the export is made again)."""


class UnplannedCall(Exception):
    """A stubbed block called with inputs the survey did not see."""


def _tensor_leaves(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    return [x for x in pytree.tree_leaves((tuple(args), dict(kwargs)))
            if isinstance(x, torch.Tensor)]


def _chained(module: torch.nn.Module, place: InChain, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
    chain, tensors = place.chain, _tensor_leaves(args, kwargs)
    if place.index == 0:
        chain.position = 0  # a trace of the forward begins (torch may trace more than once)
    if place.index != chain.position:
        raise ChainBroken(f"block {place.index} of a chain called out of turn")
    chain.position += 1
    if place.index == 0:
        first = next(_ops().sites)
        chain.kernel.sites[first] = (module, list(chain.call.weights))
        for offset, member in enumerate(chain.modules[1:], start=1):
            site = next(_ops().sites)
            if site != first + offset:
                raise ChainBroken("the sites of a chain are not consecutive")
            chain.kernel.sites[site] = (member, list(chain.call.weights))
        op = chain_op_for(len(tensors))
        result = op(chain.kernel.number, first, len(chain.modules), chain.carried, *tensors)
        chain.expected = list(tensors)
        chain.expected[chain.carried] = result
        return result
    if chain.expected is None or len(tensors) != len(chain.expected) or any(
            a is not b for a, b in zip(tensors, chain.expected, strict=True)):
        raise ChainBroken(f"block {place.index} of a chain got other tensors than surveyed")
    return tensors[chain.carried]


def _stub(module: torch.nn.Module, plans: dict[str, StubbedCall | InChain],
          ) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        planned = plans.get(call_key(module, args, kwargs))
        if planned is None:
            raise UnplannedCall(f"a call of {type(module).__name__} with inputs the survey "
                                "did not see")
        if isinstance(planned, InChain):
            return _chained(module, planned, args, kwargs)
        rep, kernel = planned.call, planned.kernel
        site = next(_ops().sites)
        kernel.sites[site] = (module, list(rep.weights))
        leaves = pytree.tree_leaves((tuple(args), dict(kwargs)))
        tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
        op = op_for(len(tensors), len(rep.out_metas))
        results = op(kernel.number, site, *tensors)
        results = list(results) if isinstance(results, tuple | list) else [results]
        return rebuild_output(rep.outputs, rep.out_spec, results, tensors)

    return forward


@contextlib.contextmanager
def _insides_hidden(modules: list[torch.nn.Module], submodules: bool) -> Iterator[None]:
    """The modules' (and their submodules') parameter and buffer tables empty for a while,
    and with `submodules` their submodule tables too (torch.export's bookkeeping walks every
    module of the model at each module call: 966 for 80 Llama layers, 83 without theirs)."""
    kept: list[tuple[dict[str, Any], dict[str, Any]]] = []
    try:
        for module in modules:
            for sub in list(module.modules()):
                for table in (sub._parameters, sub._buffers):
                    if table:
                        kept.append((table, dict(table)))
                        table.clear()
            if submodules and module._modules:
                kept.append((module._modules, dict(module._modules)))
                module._modules.clear()
        yield
    finally:
        for table, contents in kept:
            table.update(contents)


@contextlib.contextmanager
def stubbed(plans: dict[int, tuple[torch.nn.Module, dict[str, StubbedCall | InChain]]],
            *, submodules: bool = True) -> Iterator[None]:
    """Each block (id → (module, its calls by key)) gets its stub, and its weights (and, with
    `submodules`, its submodules: only a parent reading into a block needs them) are out of
    sight, while the body runs."""
    saved: dict[int, Any] = {}
    modules = [module for module, _calls in plans.values()]
    try:
        for key, (module, calls) in plans.items():
            saved[key] = module.__dict__.get("forward")
            module.forward = _stub(module, calls)  # type: ignore[method-assign]
        with _insides_hidden(modules, submodules):
            yield
    finally:
        for key, (module, _calls) in plans.items():
            if key not in saved:
                continue
            if saved[key] is None:
                module.__dict__.pop("forward", None)
            else:
                module.forward = saved[key]  # type: ignore[method-assign]


__all__ = ["IMPORTED_PREFIX", "NAMESPACE", "ChainBroken", "ChainPlan", "GroupKernel", "InChain",
           "StubbedCall", "UnplannedCall", "attribute", "chain_op_for", "new_kernel", "op_for",
           "stubbed"]

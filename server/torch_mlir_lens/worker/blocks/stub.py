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

A call whose inputs were not seen in the survey (another type, another plain value) runs the
block's own forward: it is lowered inline, as without stitching.

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

from torch_mlir_lens.worker.blocks.record import BlockCall, TensorMeta, attribute, call_key

NAMESPACE = "torch_mlir_lens_blocks"
IMPORTED_PREFIX = f"torch.{NAMESPACE}."  # the name torch-mlir gives an unknown op

_library: torch.library.Library | None = None
_defined: set[str] = set()
_numbers = itertools.count(1)
_kernels: weakref.WeakValueDictionary[int, GroupKernel] = weakref.WeakValueDictionary()


@dataclass(eq=False)
class GroupKernel:
    """What the op does for one group: its results' types, the block's function, and the
    blocks it is called at (site number → the block and its weights' names)."""

    number: int
    out_metas: list[TensorMeta]
    run: Callable[..., Any] | None = None  # the exported block function, once traced
    sites: dict[int, tuple[torch.nn.Module, list[str]]] = field(default_factory=dict)

    def weights(self, site: int) -> list[torch.Tensor]:
        """The weights of the block called at `site`, in the function's order."""
        module, names = self.sites[site]
        return [attribute(module, name) for name in names]


def new_kernel(out_metas: list[TensorMeta]) -> GroupKernel:
    """A group's entry, under a number unique in the process."""
    kernel = GroupKernel(next(_numbers), list(out_metas))
    _kernels[kernel.number] = kernel
    return kernel


def _kernel(number: int) -> GroupKernel:
    kernel = _kernels.get(number)
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


def op_for(inputs: int, results: int) -> Any:
    """The op taking a group and a site number and `inputs` tensors, returning `results`
    tensors."""
    global _library
    name = f"call_{inputs}_{results}"
    if name not in _defined:
        if _library is None:
            _library = torch.library.Library(NAMESPACE, "FRAGMENT")
        params = ", ".join(f"Tensor t{i}" for i in range(inputs))
        returns = "Tensor" if results == 1 else "(" + ", ".join(["Tensor"] * results) + ")"
        _library.define(f"{name}(int group, int site, {params}) -> {returns}")
        torch.library.register_fake(f"{NAMESPACE}::{name}", _fake, lib=_library)
        _library.impl(name, _eager, "CompositeExplicitAutograd")
        _defined.add(name)
    return getattr(getattr(torch.ops, NAMESPACE), name).default


@dataclass
class StubbedCall:
    """What a block's stub needs of its group: the op, its kernel, the recorded call."""

    kernel: GroupKernel
    call: BlockCall  # the group's representative: outputs and weights, by name


def _stub(module: torch.nn.Module, original: Callable[..., Any],
          plans: dict[str, StubbedCall]) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        planned = plans.get(call_key(module, args, kwargs))
        if planned is None:
            return original(*args, **kwargs)
        rep, kernel = planned.call, planned.kernel
        site = next(_sites)
        kernel.sites[site] = (module, list(rep.weights))
        leaves = pytree.tree_leaves((tuple(args), dict(kwargs)))
        tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
        op = op_for(len(tensors), len(rep.out_metas))
        results = op(kernel.number, site, *tensors)
        results = list(results) if isinstance(results, tuple | list) else [results]
        out: list[Any] = []
        for leaf in rep.outputs:
            if leaf.kind == "result":
                out.append(results[leaf.index])
            elif leaf.kind == "input":
                out.append(tensors[leaf.index])
            else:
                out.append(leaf.value)
        return pytree.tree_unflatten(out, rep.out_spec)

    return forward


_sites = itertools.count(1)


@contextlib.contextmanager
def _weights_hidden(modules: list[torch.nn.Module]) -> Iterator[None]:
    """The modules' (and their submodules') parameter and buffer tables empty for a while."""
    kept: list[tuple[dict[str, Any], dict[str, Any]]] = []
    try:
        for module in modules:
            for sub in module.modules():
                for table in (sub._parameters, sub._buffers):
                    if table:
                        kept.append((table, dict(table)))
                        table.clear()
        yield
    finally:
        for table, contents in kept:
            table.update(contents)


@contextlib.contextmanager
def stubbed(plans: dict[int, tuple[torch.nn.Module, dict[str, StubbedCall]]]) -> Iterator[None]:
    """Each block (id → (module, its calls by key)) gets its stub, and its weights are out of
    sight, while the body runs."""
    saved: dict[int, Any] = {}
    modules = [module for module, _calls in plans.values()]
    try:
        for key, (module, calls) in plans.items():
            saved[key] = module.__dict__.get("forward")
            module.forward = _stub(module, module.forward, calls)  # type: ignore[method-assign]
        with _weights_hidden(modules):
            yield
    finally:
        for key, (module, _calls) in plans.items():
            if key not in saved:
                continue
            if saved[key] is None:
                module.__dict__.pop("forward", None)
            else:
                module.forward = saved[key]  # type: ignore[method-assign]


__all__ = ["IMPORTED_PREFIX", "NAMESPACE", "GroupKernel", "StubbedCall", "attribute",
           "new_kernel", "op_for", "stubbed"]

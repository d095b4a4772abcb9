"""The sizes a module with dynamic dims is verified at, and example inputs of those sizes.

    dynamic_dims(program, fn, args, kwargs, spec)  → [DynamicDim]: each free size symbol of the
                                                     exported program, named, with its range
    size_points(dims)                              → the sizes to run, the example's first
    inputs_at(program, args, kwargs, point)        → (args, kwargs) of those sizes

What the exported program says is what counts: its user inputs' symbolic shapes and its range
constraints (a `Dim("seq", max=512)`, or a bound torch.export found itself). Names come from
the `dynamic_shapes` spec the module was exported with ("batch", "seq"); a symbol no spec
entry names is called after its input and dim ("ids.shape[1]").

The sizes, per dim (each point moves every dim at once, to values that differ between dims,
so that a compiled module mixing two dims up cannot pass, and from the example's): the
example's own; a small one from 2 up (torch.export specializes 0 and 1, so 2 is the smallest
size a dynamic dim can take); an odd prime from 5 up; and, when a dim is bounded, its maximum
(other dims at the example's sizes; left out when that makes the inputs more than MAX_GROWTH
times the example's). Each value stays inside the dim's range; a point equal to an earlier
one is dropped.

Inputs of another size are made from the example's own values, resampled with a fixed seed:
token ids stay in the vocabulary, masks stay 0/1, and no value is made up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy
import torch
import torch.utils._pytree as pytree

from torch_mlir_lens.protocol.verify_results import DimSize
from torch_mlir_lens.worker.stages.dynamic_spec import named_dims

SMALLEST = 2  # torch.export specializes 0 and 1: a dynamic dim is at least 2
PRIMES = (5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
# The bound's point is run when its inputs are at most this many times the example's (the
# eager and compiled runs grow with them; a far bound of a big model would take minutes).
MAX_GROWTH = 64
SEED = 0


@dataclass(frozen=True)
class DynamicDim:
    """One free size symbol of the exported program."""

    name: str
    symbol: Any  # sympy.Symbol
    example: int
    low: int  # at least SMALLEST
    high: int | None  # None: unbounded


Point = tuple[DimSize, ...]  # one size per dynamic dim, in `dynamic_dims` order


def _user_placeholders(program: Any) -> list[Any]:
    names = list(program.graph_signature.user_inputs)
    by_name = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    return [by_name.get(name) for name in names]


def _bound(value: Any) -> int | None:
    """An integer bound of a range constraint; None for infinity (torch's `int_oo` is neither
    an int nor a sympy Integer, and says it is finite)."""
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, sympy.Integer) else None


def dynamic_dims(program: Any, fn: Any, args: Sequence[Any], kwargs: dict[str, Any],
                 spec: Any = None) -> list[DynamicDim]:
    """The free size symbols of the program's user inputs, first seen first, named."""
    leaves = pytree.tree_leaves((tuple(args), dict(kwargs)))
    placeholders = _user_placeholders(program)
    if len(placeholders) != len(leaves):
        return []
    names = {(id(d.tensor), d.axis): d.name for d in named_dims(fn, args, kwargs, spec)}
    ranges = getattr(program, "range_constraints", {}) or {}
    found: dict[Any, DynamicDim] = {}
    for leaf, node in zip(leaves, placeholders, strict=True):
        value = node.meta.get("val") if node is not None else None
        if not isinstance(leaf, torch.Tensor) or value is None:
            continue
        for dim, size in enumerate(getattr(value, "shape", ())):
            if not isinstance(size, torch.SymInt):
                continue
            expr = size.node.expr
            if not isinstance(expr, sympy.Symbol) or expr in found:
                continue  # a derived size (2*s0) follows its symbols
            name = names.get((id(leaf), dim), f"{node.name}.shape[{dim}]")
            span = ranges.get(expr)
            low = max(SMALLEST, _bound(span.lower) or 0) if span is not None else SMALLEST
            high = _bound(span.upper) if span is not None else None
            found[expr] = DynamicDim(name, expr, int(leaf.shape[dim]), low, high)
    return list(found.values())


def _pick(candidates: Sequence[int], dim: DynamicDim, taken: set[int]) -> int | None:
    for value in candidates:
        if dim.low <= value and (dim.high is None or value <= dim.high) \
                and value not in taken and value != dim.example:
            return value
    return None


def size_points(dims: Sequence[DynamicDim]) -> list[Point]:
    """The sizes to run: the example's, then small, odd prime and (when bounded) maximum."""
    if not dims:
        return []
    example = tuple(DimSize(d.name, d.example) for d in dims)
    points: list[Point] = [example]
    for candidates in (range(SMALLEST, SMALLEST + 64), PRIMES):
        taken: set[int] = set()
        sizes = []
        for dim in dims:
            value = _pick(candidates, dim, taken)
            if value is None:
                value = dim.example
            taken.add(value)
            sizes.append(DimSize(dim.name, value))
        points.append(tuple(sizes))
    bound = tuple(DimSize(d.name, d.high if d.high is not None else d.example) for d in dims)
    growth = math.prod(b.size / max(d.example, 1) for b, d in zip(bound, dims, strict=True))
    if any(d.high is not None for d in dims) and growth <= MAX_GROWTH:
        points.append(bound)
    unique: list[Point] = []
    for point in points:
        if point not in unique:
            unique.append(point)
    return unique


def _resampled(example: torch.Tensor, shape: Sequence[int], gen: torch.Generator) -> torch.Tensor:
    """A tensor of `shape` whose elements are drawn from `example`'s own elements."""
    flat = example.detach().reshape(-1)
    count = int(torch.tensor(list(shape), dtype=torch.int64).prod().item()) if shape else 1
    if flat.numel() == 0 or count == 0:
        return torch.zeros(tuple(shape), dtype=example.dtype)
    picks = torch.randint(0, flat.numel(), (count,), generator=gen)
    return flat[picks].reshape(tuple(shape)).clone()


def inputs_at(program: Any, args: Sequence[Any], kwargs: dict[str, Any],
              dims: Sequence[DynamicDim], point: Point,
              ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Example inputs whose dynamic dims have the sizes of `point`."""
    values = {dim.symbol: size.size for dim, size in zip(dims, point, strict=True)}
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    placeholders = _user_placeholders(program)
    gen = torch.Generator().manual_seed(SEED)
    out = []
    for leaf, node in zip(leaves, placeholders, strict=True):
        value = node.meta.get("val") if node is not None else None
        if not isinstance(leaf, torch.Tensor) or value is None:
            out.append(leaf)
            continue
        shape = [int(sympy.sympify(s.node.expr).subs(values)) if isinstance(s, torch.SymInt)
                 else int(s) for s in value.shape]
        out.append(leaf if list(leaf.shape) == shape else _resampled(leaf, shape, gen))
    new_args, new_kwargs = pytree.tree_unflatten(out, spec)
    return tuple(new_args), dict(new_kwargs)

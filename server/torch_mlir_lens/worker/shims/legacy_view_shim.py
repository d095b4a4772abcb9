"""Views that torch-mlir 20261001 lowers to wrong Linalg when two dynamic dims merge.

torch-mlir's legacy `aten.view` lowering (`ConvertAtenViewOp` in TorchToLinalg's
DataMovement.cpp, benefit 300, tried before the other two view patterns) walks the input and
output dims side by side. When a slice starts with a dynamic input dim that it cannot match
otherwise, it pairs it with the dynamic output dim across from it and checks nothing; the
rest of the slice is then solved against the wrong element count, and one of the dims is
narrowed to a static 1 with a `tensor.cast` that does not hold at run time. `nn.Linear` on a
`[batch, seq, features]` input with both dims dynamic is the common case: its matmul views
the input as `[batch * seq, features]`, and 1152 of 1280 outputs come out wrong, silently.
Upstream: llvm/torch-mlir#4743 (also #3852); the fix, PR #4776 ("only pair when the output
dim is static"), is not in the pinned wheel.

The shim (`reroute_narrowing_views`, run on the torch-backend IR before the Linalg pipeline):
every view the legacy pattern would pair that way (`legacy_view_pairs_unchecked`, a port of
its decision, nothing else) is split in two views through one dimension, `view(x, [-1])`
then the original view of that. Both halves lower correctly with the legacy pattern itself
(a collapse of every dim, then an expansion or a `tensor.reshape` with run-time sizes), so
the IR stays Linalg and every other view is left alone. Verify at several sizes proves it
(tests/worker/test_dynamic_verify.py).

The shim is the Linalg target's (and its partial lowering's): a custom pipeline is the user's
own torch-mlir run and is left as torch-mlir makes it. When such a pipeline converts to Linalg
and a narrowing view is in the module, its result warns at the Python line that made the view
(`unshimmed_warnings`), naming the upstream issue.

Drop this module (and its calls in `worker/lowering/lowerer.py`) once a torch-mlir with PR
#4776 is pinned: `tests/worker/test_legacy_view_shim.py::test_upstream_still_narrows` lowers
the Linear case without the shim and fails the day upstream no longer narrows it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, Severity
from torch_mlir_lens.worker.ir.library_diags import related_frames
from torch_mlir_lens.worker.ir.locations import LocationResolver, UserFiles

UPSTREAM_ISSUE = "llvm/torch-mlir#4743"
UPSTREAM_FIX = "PR #4776"
# Passes (and pipelines) that run torch-mlir's TorchToLinalg view patterns.
_LINALG_CONVERSIONS = ("convert-torch-to-linalg", "torch-backend-to-linalg-on-tensors")
UNKNOWN = -1  # torch-mlir's kUnknownSize: the arithmetic below relies on its value, as upstream

_VTENSOR = re.compile(r"^!torch\.vtensor<\[([^\]]*)\],(.+)>$")


@dataclass(frozen=True)
class SizeItem:
    """One element of a view's size list, as the legacy pattern sees it."""

    constant: int | None = None  # a `torch.constant.int`
    input_dim: int | None = None  # `torch.aten.size.int` of the view's own input at this dim


Mapping = tuple[list[int], list[int]]  # input and output indices of one slice


def _product(dims: Sequence[int]) -> int:
    return math.prod(dims)


def _div(a: int, b: int) -> int:
    """C++ integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _map_all_to_single(xs: Sequence[int], ys: Sequence[int]) -> Mapping | None:
    if not xs or not ys:
        return None

    def valid(expected: int, dims: Sequence[int]) -> bool:
        return UNKNOWN in dims or expected == UNKNOWN or _product(dims) == expected

    if len(xs) == 1:
        return ([0], list(range(len(ys)))) if valid(xs[0], ys) else None
    if len(ys) == 1:
        return (list(range(len(xs))), [0]) if valid(ys[0], xs) else None
    return None


def _map_static(xs: Sequence[int], ys: Sequence[int]) -> Mapping | None:
    if not xs or not ys or UNKNOWN in (xs[0], ys[0]):
        return None
    x_total, y_total, x_idx, y_idx = xs[0], ys[0], [0], [0]
    while x_total != y_total:
        if x_total < y_total:
            if len(x_idx) == len(xs) or xs[len(x_idx)] == UNKNOWN:
                return None
            x_total *= xs[len(x_idx)]
            x_idx.append(len(x_idx))
        else:
            if len(y_idx) == len(ys) or ys[len(y_idx)] == UNKNOWN:
                return None
            y_total *= ys[len(y_idx)]
            y_idx.append(len(y_idx))
    return x_idx, y_idx


def _map_parallel_unknown(xs: Sequence[int], ys: Sequence[int], x_mult: int,
                          y_mult: int) -> Mapping | None:
    if not xs or not ys or xs.count(UNKNOWN) > 1 or ys.count(UNKNOWN) > 1:
        return None
    x_unknown, y_unknown = xs[0] == UNKNOWN, ys[0] == UNKNOWN
    x_total = x_mult if x_unknown else xs[0]
    y_total = y_mult if y_unknown else ys[0]
    x_idx, y_idx = [0], [0]
    while x_total != y_total or x_unknown != y_unknown:
        if (not x_unknown and y_unknown) or x_total < y_total:
            if len(x_idx) == len(xs):
                return None
            nxt = xs[len(x_idx)]
            if nxt == UNKNOWN:
                if x_unknown:
                    return None
                x_total, x_unknown = x_total * x_mult, True
            else:
                x_total *= nxt
            x_idx.append(len(x_idx))
        else:
            if len(y_idx) == len(ys):
                return None
            nxt = ys[len(y_idx)]
            if nxt == UNKNOWN:
                if y_unknown:
                    return None
                y_total, y_unknown = y_total * y_mult, True
            else:
                y_total *= nxt
            y_idx.append(len(y_idx))
    return x_idx, y_idx


def _solve_single_unknown(inp: list[int], out: list[int]) -> None:
    """When exactly one dim of the two is unknown, the element count gives it (in place)."""
    if not inp or not out or inp.count(UNKNOWN) + out.count(UNKNOWN) != 1:
        return
    in_prod, out_prod = _product(inp), _product(out)
    if inp.count(UNKNOWN):
        in_prod = _div(in_prod, UNKNOWN)
        if in_prod:
            inp[inp.index(UNKNOWN)] = _div(out_prod, in_prod)
    else:
        out_prod = _div(out_prod, UNKNOWN)
        if out_prod:
            out[out.index(UNKNOWN)] = _div(in_prod, out_prod)


def legacy_view_pairs_unchecked(input_shape: Sequence[int], items: Sequence[SizeItem]) -> bool:
    """Whether the legacy view pattern pairs a dynamic input dim with a dynamic output dim
    without any check (the #4743 miscompile), for a view of a tensor of `input_shape`
    (UNKNOWN for `?`) to the size list `items`.

    A faithful port of `ConvertAtenViewOp::matchAndRewrite`'s decisions in torch-mlir
    20261001; a view the pattern gives up on is False (a correct pattern lowers it).
    """
    in_shape = list(input_shape)
    in_rank, out_rank = len(in_shape), len(items)
    if in_rank == 0 or out_rank == 0:
        return False
    if sum(1 for it in items if it.constant == -1) > 1:
        return False
    out_shape = [UNKNOWN] * out_rank
    for i, it in enumerate(items):
        if it.input_dim is not None:
            out_shape[i] = in_shape[it.input_dim]
        elif it.constant is not None and it.constant != -1:
            out_shape[i] = it.constant
    _solve_single_unknown(in_shape, out_shape)
    in_dyn, out_dyn = in_shape.count(UNKNOWN), out_shape.count(UNKNOWN)
    if out_dyn > 1:
        return False
    singles_equal = in_dyn == 1 and out_dyn == 1 and _product(in_shape) == _product(out_shape)
    total_in, total_out = abs(_product(in_shape)), abs(_product(out_shape))
    gcd = math.gcd(total_in, total_out)
    if gcd == 0:
        return False
    x_mult, y_mult = total_out // gcd, total_in // gcd
    unchanged: list[tuple[int, int]] = []
    for out_dim, it in enumerate(items):
        if it.input_dim is not None:
            unchanged.append((it.input_dim, out_dim))
        elif singles_equal and out_shape[out_dim] == UNKNOWN:
            unchanged.append((in_shape.index(UNKNOWN), out_dim))
    unchanged.append((in_rank, out_rank))

    in_dim = out_dim = 0
    for next_in, next_out in unchanged:
        assumed_not_split = False
        while in_dim < next_in and out_dim < next_out:
            xs, ys = in_shape[in_dim:next_in], out_shape[out_dim:next_out]
            if assumed_not_split and len(xs) == 1 and len(ys) != 1 and xs[0] == UNKNOWN:
                return False  # "ambiguous expand": the pattern gives up
            mapping = _map_all_to_single(xs, ys)
            if mapping is not None:
                _solve_single_unknown(xs, ys)
                if len(xs) == 1 and UNKNOWN in ys:
                    xs[0] = UNKNOWN
                elif len(ys) == 1 and UNKNOWN in xs:
                    ys[0] = UNKNOWN
                in_shape[in_dim:next_in], out_shape[out_dim:next_out] = xs, ys
            elif (mapping := _map_static(xs, ys)) is not None:
                pass
            elif (mapping := _map_parallel_unknown(xs, ys, x_mult, y_mult)) is not None:
                assumed_not_split = True
            elif xs[0] == UNKNOWN:
                if ys[0] == UNKNOWN:
                    return True  # paired, and nothing checks it at run time: #4743
                in_shape[in_dim] = ys[0]  # checked at run time
                mapping, assumed_not_split = ([0], [0]), True
            else:
                return False
            in_dim += mapping[0][-1] + 1
            out_dim += mapping[1][-1] + 1
        while in_dim <= next_in and in_dim < in_rank:
            if in_dim != next_in and in_shape[in_dim] != 1:
                return False
            in_dim += 1
        while out_dim <= next_out and out_dim < out_rank:
            if out_dim != next_out and out_shape[out_dim] != 1:
                return False
            out_dim += 1
    return False


# --- the torch-backend IR ----------------------------------------------------------------------


def vtensor_shape(ty: ir.Type) -> tuple[list[int], str] | None:
    """(sizes with UNKNOWN for `?`, dtype text) of a ranked `!torch.vtensor`, else None."""
    match = _VTENSOR.match(str(ty))
    if match is None:
        return None
    sizes = [s.strip() for s in match.group(1).split(",") if s.strip()]
    return [UNKNOWN if s == "?" else int(s) for s in sizes], match.group(2)


def _owner(value: ir.Value) -> Any:
    owner = value.owner
    return owner if isinstance(owner, ir.OpView | ir.Operation) else None


def _constant_int(value: ir.Value) -> int | None:
    owner = _owner(value)
    if owner is None or owner.name != "torch.constant.int":
        return None
    return int(ir.IntegerAttr(owner.attributes["value"]).value)


def _size_item(value: ir.Value, view_input: ir.Value, rank: int) -> SizeItem:
    constant = _constant_int(value)
    if constant is not None:
        return SizeItem(constant=constant)
    owner = _owner(value)
    if owner is not None and owner.name == "torch.aten.size.int" \
            and owner.operands[0] == view_input:
        dim = _constant_int(owner.operands[1])
        if dim is not None and -rank <= dim < rank:
            return SizeItem(input_dim=dim % rank)
    return SizeItem()


def narrowing_views(module_op: Any) -> list[ir.Operation]:
    """The `torch.aten.view` ops of a torch-backend module that the legacy pattern would
    lower wrongly (`legacy_view_pairs_unchecked`)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "torch.aten.view" and _narrows(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    return found


def _narrows(view: ir.Operation) -> bool:
    shape = vtensor_shape(view.operands[0].type)
    if shape is None or UNKNOWN not in shape[0]:
        return False  # static views are always right
    sizes = _owner(view.operands[1])
    if sizes is None or sizes.name != "torch.prim.ListConstruct":
        return False
    rank = len(shape[0])
    items = [_size_item(v, view.operands[0], rank) for v in sizes.operands]
    return legacy_view_pairs_unchecked(shape[0], items)


def reroute_narrowing_views(module_op: Any) -> list[ir.Location]:
    """Rewrite each narrowing view `view(x, sizes)` into `view(view(x, [-1]), sizes)`, in
    place; returns the locations of the views rewritten (empty: nothing to do)."""
    views = narrowing_views(module_op)
    if not views:
        return []
    ctx = module_op.context
    with ctx:
        int_type = ir.Type.parse("!torch.int")
        list_type = ir.Type.parse("!torch.list<int>")
        i64 = ir.IntegerType.get_signless(64)
        for view in views:
            source = view.operands[0]
            shape = vtensor_shape(source.type)
            assert shape is not None  # _narrows checked it
            flat_type = ir.Type.parse(f"!torch.vtensor<[?],{shape[1]}>")
            with ir.InsertionPoint(view), view.location:
                minus_one = ir.Operation.create(
                    "torch.constant.int", results=[int_type],
                    attributes={"value": ir.IntegerAttr.get(i64, -1)})
                flat_sizes = ir.Operation.create(
                    "torch.prim.ListConstruct", results=[list_type],
                    operands=[minus_one.result])
                flat = ir.Operation.create(
                    "torch.aten.view", results=[flat_type],
                    operands=[source, flat_sizes.result])
            view.operands[0] = flat.result
    return [view.location for view in views]


# --- where the shim does not reach: a warning --------------------------------------------------

WARNING = (f"`aten.view` merging dims that are both dynamic: torch-mlir's Linalg lowering of "
           f"it computes wrong values at run time, silently ({UPSTREAM_ISSUE}; the fix, "
           f"{UPSTREAM_FIX}, is not in this torch-mlir). The `linalg` target works around it; "
           f"this pipeline runs torch-mlir's own lowering.")


def converts_to_linalg(pipeline: str) -> bool:
    """Whether a pass pipeline runs torch-mlir's Torch → Linalg conversion."""
    return any(name in pipeline for name in _LINALG_CONVERSIONS)


def unshimmed_warnings(torch_module: Any, pipeline: str, users: UserFiles,
                       target: str) -> list[LensDiagnostic]:
    """One warning per Python line whose view the Linalg conversion of `pipeline` will
    miscompile (none when it does not convert to Linalg, or nothing narrows)."""
    if torch_module is None or not converts_to_linalg(pipeline):
        return []
    resolver = LocationResolver(users)
    out: list[LensDiagnostic] = []
    seen: set[tuple[str | None, int | None]] = set()
    for view in narrowing_views(torch_module):
        loc = str(view.location)
        frames = resolver.user_frames(loc)
        file, line = frames[0] if frames else (None, None)
        if (file, line) in seen:
            continue
        seen.add((file, line))
        related = next((related_frames(chain, "`aten.view`")
                        for chain in resolver.full_chains(loc)), [])
        out.append(LensDiagnostic(
            severity=Severity.WARNING, message=WARNING, kind=ErrorKind.KNOWN_MISCOMPILE,
            file=file, line=line, op="torch.aten.view", target=target, related=related))
    return out

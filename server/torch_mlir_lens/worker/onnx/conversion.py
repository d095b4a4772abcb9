"""torch-mlir's conversion of ONNX nodes to Torch ops, with every node it rejects found.

`convert-torch-onnx-to-torch` fails as a whole at the first node it has no conversion for (a
`com.microsoft` `FastGelu`, a `MaxPool` of opset 9), and that one error is all plain
torch-mlir says. Here each node is converted alone too (one node in a function of its own,
cached by its op, types and attributes): a node that fails alone is a culprit, unless one of
its operands comes from a culprit (ONNX's shape inference knows nothing of a `FastGelu`'s
result, so the next node's input has no type: it fails only because of it, a knock-on).
Those nodes become calls to declared functions (partial.py's outlining), and the conversion
runs on the rest: the Torch IR of everything torch-mlir accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torch_mlir import ir

from torch_mlir_lens.rules.targets import ONNX_CONVERSION_PIPELINE
from torch_mlir_lens.worker.culprits import op_isolation, partial
from torch_mlir_lens.worker.culprits.illegal_ops import FoundOp, display_name, op_name, walk_ops
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag, pipeline_errors
from torch_mlir_lens.worker.onnx.node_diags import Rejected
from torch_mlir_lens.worker.process import WORKER

_CACHE_SIZE = 4096


@dataclass
class Conversion:
    """The model's nodes converted: the module (rejected nodes as calls; None when even that
    fails), the culprits, their knock-ons, the calls' symbols, and the errors of a failure."""

    module: Any = None
    rejected: list[Rejected] = field(default_factory=list)
    knock_on: list[Rejected] = field(default_factory=list)
    symbols: set[str] = field(default_factory=set)
    errors: list[Diag] = field(default_factory=list)


def _is_node(op: Any) -> bool:
    return op_name(op) == "torch.operator" and display_name(op).startswith("onnx.")


def _function_of(op: Any) -> Any | None:
    parent = op.operation.parent
    while parent is not None and str(parent.name) != "func.func":
        parent = parent.parent
    return parent


def _meta(op: Any) -> dict[str, Any]:
    """The `torch.onnx_meta.*` attributes of the op's function (its opsets: the conversion
    picks its pattern by them)."""
    func = _function_of(op)
    if func is None:
        return {}
    attrs = func.attributes
    return {name: attrs[name] for name in list(attrs) if str(name).startswith("torch.onnx_meta.")}


def _isolated(op: Any, meta: dict[str, Any]) -> Any:
    module = op_isolation.isolate(op)
    for func in module.body.operations:
        for name, attr in meta.items():
            func.attributes[name] = attr
    return module


def _fails_alone(op: Any) -> str | None:
    """None when the node converts alone, else the conversion's first error line."""
    meta = _meta(op)
    key = f"{sorted((k, str(v)) for k, v in meta.items())}|{op_isolation.isolation_key(op)}"
    alone_verdicts = WORKER.cache(f"{__name__}.alone", _CACHE_SIZE)  # key → None or why not
    if key not in alone_verdicts:
        why: str | None = None
        try:
            alone = _isolated(op, meta)
            errors = pipeline_errors(alone.operation, ONNX_CONVERSION_PIPELINE)
            if errors is not None:
                why = op_isolation.first_line(errors[0].message)
            elif any(_is_node(left) for left in walk_ops(alone.operation)):
                why = "left unconverted"  # no pattern took it (its result unused alone)
        except Exception:  # a node the isolation cannot copy: judged in its context
            why = None
        alone_verdicts.put(key, why)
    return alone_verdicts.get(key)  # type: ignore[no-any-return]


def _feeders(op: Any) -> list[Any]:
    owners = []
    for value in op.operation.operands:
        owner = value.owner
        if not isinstance(owner, ir.Block):
            owners.append(owner.operation if hasattr(owner, "operation") else owner)
    return owners


def convert(raw: Any) -> Conversion:
    """The conversion of `raw` (the imported model, not changed) with every rejected node."""
    work = raw.clone()
    errors = pipeline_errors(work, ONNX_CONVERSION_PIPELINE)
    if errors is None:
        return Conversion(module=work)
    work = raw.clone()
    ops = walk_ops(work)
    failing: dict[Any, int] = {}  # operation → walk index
    found: list[FoundOp] = []
    result = Conversion(errors=errors)
    for index, op in enumerate(ops):
        if not _is_node(op):
            continue
        why = _fails_alone(op)
        if why is None:
            continue
        rejected = Rejected(display_name(op), str(op.location), why)
        fed = any(f in failing for f in _feeders(op))
        (result.knock_on if fed else result.rejected).append(rejected)
        failing[op.operation] = index
        found.append(FoundOp(rejected.name, rejected.location, why, index))
    if not found:
        return result  # nothing fails alone: the errors say what failed in context
    meta = _meta(ops[found[0].index])
    symbols = partial.outline_ops(work, found)
    if symbols is None:
        return result
    for func in work.regions[0].blocks[0].operations:  # the conversion reads every function's
        for name, attr in meta.items():                # opset, declarations' too
            func.attributes[name] = attr
    if pipeline_errors(work, ONNX_CONVERSION_PIPELINE) is not None:
        return result
    result.module, result.symbols = work, symbols
    return result

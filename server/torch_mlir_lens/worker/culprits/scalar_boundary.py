"""Scalars at the function's boundary: the culprit behind "failed to legalize 'func.func'".

A `forward` that returns a Python `int`, `bool` or `float` (`return x.shape[1]`,
`return x.numel() > 3`) gives `@main` a `!torch.int` / `!torch.bool` / `!torch.float` result.
TOSA has tensors only: its conversion rejects the function itself, an error that names no op
of the user's and sits at `loc(unknown)`. Here each such result becomes one culprit at the
line that makes the value (the op producing it, or its nearest neighbour with a user line),
else at the `return` of `forward`.
"""

from __future__ import annotations

import re
from typing import Any

from torch_mlir import ir

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, Severity
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.worker.culprits import illegal_ops
from torch_mlir_lens.worker.culprits.forward_site import ForwardSite
from torch_mlir_lens.worker.ir.locations import LocationResolver
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag

_BOUNDARY = re.compile(r"failed to legalize operation '(func\.func|func\.return)'")
_PYTHON = {"!torch.int": "int", "!torch.bool": "bool", "!torch.float": "float",
           "!torch.number": "number", "!torch.str": "str"}
RETURN_OP = "func.return"


def is_boundary_error(d: Diag) -> bool:
    """A backend rejected the function or its return: its signature holds a type it lacks."""
    return bool(_BOUNDARY.search(d.message))


def _main(module_op: Any) -> Any | None:
    body = module_op.operation.regions[0].blocks[0]
    funcs = [op for op in body.operations if illegal_ops.op_name(op) == "func.func"
             and len(op.regions[0].blocks) > 0]
    return funcs[0] if funcs else None


def _return_op(fn: Any) -> Any | None:
    block = fn.regions[0].blocks[0]
    ops = list(block.operations)
    return ops[-1] if ops and illegal_ops.op_name(ops[-1]) == RETURN_OP else None


def scalar_results(torch_module: Any, resolver: LocationResolver) -> list[tuple[str, str | None]]:
    """[(Python type name, location text of the value's line or None)] for each non-tensor
    result of the module's function."""
    fn = _main(torch_module)
    ret = _return_op(fn) if fn is not None else None
    if ret is None:
        return []
    out: list[tuple[str, str | None]] = []
    for value in ret.operands:
        kind = _PYTHON.get(str(value.type))
        if kind is None:
            continue
        owner = value.owner
        location = None
        if not isinstance(owner, ir.Block):
            text = str(owner.location)
            if resolver.user_frames(text):
                location = text
            else:
                location = illegal_ops.nearest_located(owner, resolver, hops=8)
        out.append((kind, location))
    return out


def boundary_diagnostics(torch_module: Any, target: str, errors: list[Diag],
                         resolver: LocationResolver,
                         forward: ForwardSite | None) -> list[LensDiagnostic]:
    """One culprit per scalar result when `errors` hold the backend's rejection of the
    function ([] otherwise, or when the signature has no scalar)."""
    if not any(is_boundary_error(d) for d in errors):
        return []
    title = target_title(target)
    out = []
    for kind, location in scalar_results(torch_module, resolver):
        frames = resolver.user_frames(location) if location else []
        file, line = frames[0] if frames else (
            (forward.file, forward.last_return) if forward else (None, None))
        cause = f"the Python `{kind}` `forward` returns"
        out.append(LensDiagnostic(
            severity=Severity.ERROR, kind=ErrorKind.UNSUPPORTED_OP, target=target,
            file=file, line=line, op=RETURN_OP, ops=[RETURN_OP], cause=cause,
            message=f"{cause} cannot be lowered to {title} ({title} functions take and "
                    "return tensors only: return a tensor, e.g. `torch.tensor(...)`)",
        ))
    return out


__all__ = ["RETURN_OP", "boundary_diagnostics", "is_boundary_error", "scalar_results"]

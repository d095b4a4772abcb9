"""The precision of the culprits a lowering reports: does each rejected op fail alone?

A module is lowered once with the lens to each target, and every culprit op of a target that
fails is lowered alone (`op_isolation`): benchmarks and the precision tests call this.

    culprits_lowering_alone(torch_module, target, diagnostics, user_files) → [AloneCheck]
    unnamed_failing_alone(torch_module, target, diagnostics, user_files) → [AloneCheck]
                                       the ops no diagnostic names that fail alone (missed)
    culprit_precision(fn, args, ...)   → both for each target, from a module and inputs
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir

from torch_mlir_lens.worker.culprits.illegal_ops import is_candidate, nearest_located
from torch_mlir_lens.worker.culprits.op_isolation import is_constant, op_name, verdicts
from torch_mlir_lens.worker.ir import crash_guard
from torch_mlir_lens.worker.ir.locations import LocationResolver
from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program


@dataclass
class AloneCheck:
    """One op a diagnostic names, at its line: does it lower alone?"""

    op: str  # "torch.aten.cat"
    file: str | None
    line: int | None
    instances: int  # ops of that name at that line in the module
    lowers_alone: bool  # every instance lowers alone: a false culprit
    message: str  # the backend's reason when one instance fails alone ("" otherwise)
    named: bool = True  # False: no diagnostic names the op, yet it fails alone (missed)


def _path(file: str | None) -> str | None:
    """A diagnostic's file (a path or a `file://` URI) as a normalized path."""
    if not file:
        return None
    if file.startswith("file://"):
        from urllib.parse import unquote, urlparse

        file = unquote(urlparse(file).path)
    return os.path.normpath(file)


def culprits_lowering_alone(torch_module: Any, target: str, diagnostics: Iterable[Any],
                            user_files: Iterable[str]) -> list[AloneCheck]:
    """For each op each unsupported-op diagnostic names, whether it lowers alone.

    `torch_module` is the program at the Torch backend contract as the lens builds it
    (`ProgramLowerer.contract_module()`, with any op torch-mlir itself rejects outlined;
    `culprit_precision` below does it all), `diagnostics`
    LensDiagnostics or their JSON (`kind`, `op`, `ops`, `file` (path or URI), `line`), from
    any command or view. An op is matched by name and user line (innermost user frame; an op
    with no user frame by the line of its nearest neighbour that has one, as the lens reports
    it); with several instances there, it is a true culprit when one of them fails alone.
    Ops not found in the module (a `torch.operator` torch-mlir rejects before any backend, a
    scalar `func.return`) are left out.
    """
    resolver = LocationResolver(set(user_files))
    wanted: dict[tuple[str, str | None, int | None], None] = {}
    for d in diagnostics:
        fields = d if isinstance(d, dict) else vars(d)
        if fields.get("kind") != "unsupported-op" or fields.get("severity") not in (None,
                                                                                   "error"):
            continue
        for name in fields.get("ops") or [fields.get("op")]:
            if name:
                wanted[(name, _path(fields.get("file")), fields.get("line"))] = None
    at: dict[tuple[str, str | None, int | None], list[Any]] = {}

    def visit(op: Any) -> Any:
        name = op_name(op)
        if name.startswith("torch.") and not is_constant(op) and any(
                w[0] == name for w in wanted):
            location = str(op.location)
            frames = resolver.user_frames(location)
            if not frames:
                near = nearest_located(op, resolver, hops=8)
                frames = resolver.user_frames(near) if near else []
            file, line = frames[0] if frames else (None, None)
            key = (name, _path(file), line)
            if key in wanted:
                at.setdefault(key, []).append(op)
        return ir.WalkResult.ADVANCE

    torch_module.operation.walk(visit)
    found = list(at.items())
    with crash_guard.guarded():  # an op that kills torch-mlir alone does not lower alone
        all_verdicts, _complete = verdicts([op for _k, ops in found for op in ops], target)
    out: list[AloneCheck] = []
    i = 0
    for (name, file, line), ops in found:
        mine = all_verdicts[i:i + len(ops)]
        i += len(ops)
        failing = [v for v in mine if v]
        out.append(AloneCheck(name, file, line, len(ops), not failing,
                              failing[0] if failing else ""))
    return out


def _named_ops(diagnostics: Iterable[Any]) -> set[str]:
    """Every op name a diagnostic names (its ops, the op, the knock-on ops folded into it)."""
    named: set[str] = set()
    for d in diagnostics:
        fields = d if isinstance(d, dict) else vars(d)
        named.update(v for v in fields.get("ops") or [] if isinstance(v, str))
        for knock in fields.get("knock_on") or []:  # {op, file, line}: said with its cause
            op = knock.get("op") if isinstance(knock, dict) else getattr(knock, "op", None)
            if isinstance(op, str):
                named.add(op if op.startswith("torch.") else f"torch.{op}")
        if fields.get("op"):
            named.add(str(fields["op"]))
    return named


def unnamed_failing_alone(torch_module: Any, target: str, diagnostics: Iterable[Any],
                          user_files: Iterable[str]) -> list[AloneCheck]:
    """The ops of the module that fail alone on `target` and that no diagnostic names, by
    name and user line: culprits the lowering missed ([] when it named every one)."""
    resolver = LocationResolver(set(user_files))
    named = _named_ops(diagnostics)
    ops: list[Any] = []

    def visit(op: Any) -> Any:
        name = op_name(op)
        if is_candidate(name) and not is_constant(op) and name not in named:
            ops.append(op)
        return ir.WalkResult.ADVANCE

    torch_module.operation.walk(visit)
    with crash_guard.guarded():
        found, _complete = verdicts(ops, target)
    missed: dict[tuple[str, str | None, int | None], list[str]] = {}
    for op, verdict in zip(ops, found, strict=True):
        if not verdict:
            continue
        location = str(op.location)
        frames = resolver.user_frames(location)
        if not frames:
            near = nearest_located(op, resolver, hops=8)
            frames = resolver.user_frames(near) if near else []
        file, line = frames[0] if frames else (None, None)
        missed.setdefault((op_name(op), _path(file), line), []).append(verdict)
    return [AloneCheck(name, file, line, len(v), False, v[0], named=False)
            for (name, file, line), v in missed.items()]


def culprit_precision(fn: Any, args: tuple[Any, ...], *, module_name: str,
                      user_files: Iterable[str], targets: Sequence[str] = ("linalg", "tosa",
                                                                           "stablehlo"),
                      kwargs: dict[str, Any] | None = None,
                      missed: bool = False) -> dict[str, list[AloneCheck]]:
    """Lower `fn(*args)` with the lens (one export) and check every culprit op of each target
    alone: {target: [AloneCheck]} (empty for a target that lowers). A false culprit is a check
    with `lowers_alone` True. With `missed`, the ops no diagnostic names that fail alone are
    added (`named` False): missed culprits. Export failures raise the lens' LensError."""
    files = list(user_files)
    program = export_program(fn, args, kwargs or {}, user_files=files)
    lowerer = ProgramLowerer(program, module_name=module_name, user_files=files)
    out: dict[str, list[AloneCheck]] = {}
    for target in targets:
        result = lowerer.lower(target)
        # With ops torch-mlir itself rejects (a MoE's `aten.histc`), the module with those
        # outlined: the backend's culprits are ops of it (the rejected ones, only declared
        # there, are left out: torch-mlir's own pipeline is their check).
        contract = None if result.ok else lowerer.contract_module()
        out[target] = [] if contract is None else culprits_lowering_alone(
            contract, target, result.diagnostics, files)
        if contract is not None and missed:
            out[target] += unnamed_failing_alone(contract, target, result.diagnostics, files)
    return out

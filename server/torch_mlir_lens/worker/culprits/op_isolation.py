"""Does an op lower alone? The test every reported culprit passes, with its verdicts cached.

An op is copied into a function of its own, with its operand and result types as in the
module: values made elsewhere become the function's arguments (the tensors inside a list of
tensors too, the list itself rebuilt inside, as a `cat` of two computed tensors needs), and
constant operands are copied along; an op with regions (a `torch.prim.Loop` from `while_loop`)
is copied with its body, the values its body takes from above handled the same way. The
backend's whole pipeline runs on it. An op that lowers so is not what a backend rejects,
whatever the module's own run says: that failure comes from its context (an outlined feeder,
a type at a call's boundary).

Verdicts are kept for the worker's lifetime per (op, types, constant operands, backend): the
same `cat` of two `[1,4]` tensors is tried once, in every module and every job. A constant
weight operand counts by its printed text (a resource's name, not its bytes): conversions
depend on operand types and on scalar constants, which print in full.

    isolation_key(op)                  → the text that identifies an op for its verdict
    isolate(op)                        → a new module whose one function holds a copy of `op`
    verdicts(ops, target, budget_s)    → ([Verdict], complete): `LOWERS`, a message, `UNKNOWN`
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import func as func_d

from torch_mlir_lens.rules.targets import BACKEND_PIPELINES, TORCH_BACKEND_PIPELINE, target_title
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.worker.culprits.reasons import explained
from torch_mlir_lens.worker.ir import crash_guard
from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag, pipeline_errors
from torch_mlir_lens.worker.process import WORKER

LOWERS = ""  # the verdict of an op the backend lowers alone
UNKNOWN = None  # no verdict: the op cannot be copied out, or the time budget ran out
Verdict = str | None  # LOWERS, UNKNOWN, or the backend's first error line when it fails
CACHE_SIZE = 20000  # verdicts kept (a few hundred distinct ops make a big model)
_LONG_KEY = 400  # keys longer than this (a constant's literal) are kept as a digest

_LIST = "torch.prim.ListConstruct"


def op_name(op: Any) -> str:
    """The op's name, for an Operation or an OpView."""
    return str(op.operation.name)


def _owner(value: Any) -> Any | None:
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner


def is_constant(owner: Any) -> bool:
    """A constant, a literal, or a list of constants: copied along with the op using it."""
    if owner is None or isinstance(owner, ir.Block):
        return False
    name = op_name(owner)
    if name.startswith("torch.constant.") or name == "torch.vtensor.literal":
        return True
    if name == _LIST:
        return all(is_constant(_owner(v)) for v in owner.operation.operands)
    return False


def _built_list(value: Any) -> Any | None:
    """The ListConstruct making `value` when it holds values computed elsewhere."""
    owner = _owner(value)
    if owner is not None and op_name(owner) == _LIST and not is_constant(owner):
        return owner.operation
    return None


def _constant_key(owner: Any) -> str:
    """A constant by its name, value and type. Not by printing the op: that numbers every
    value of the function around it, milliseconds per op in a big model."""
    name = op_name(owner)
    if name == _LIST:
        return "[" + ",".join(_operand_key(v) for v in owner.operation.operands) + "]"
    attrs = owner.operation.attributes
    value = str(attrs["value"]) if "value" in attrs else ""
    if len(value) > _LONG_KEY:  # a literal printed inline
        value = hashlib.sha1(value.encode()).hexdigest()
    return f"{name}({value}):{owner.operation.results[0].type}"


def _operand_key(value: Any) -> str:
    owner = _owner(value)
    if is_constant(owner):
        return _constant_key(owner)
    built = _built_list(value)
    if built is not None:  # a list's element types decide, not `!torch.list<vtensor>`
        return "[" + ",".join(_operand_key(v) for v in built.operands) + "]"
    return str(value.type)


def nested_ops(operation: Any) -> list[Any]:
    """The ops inside `operation`'s regions, at any depth (none for most ops)."""
    found: list[Any] = []
    for region in operation.regions:
        for block in region.blocks:
            for inner in block.operations:
                found.append(inner.operation)
                found.extend(nested_ops(inner.operation))
    return found


def _used_values(operation: Any) -> list[Any]:
    """The values `operation` uses: its operands, then those its body takes from above."""
    used = list(operation.operands)
    inner = nested_ops(operation)
    if not inner:
        return used
    made_inside = {r for o in inner for r in o.results}
    made_inside.update(a for o in [operation, *inner] for region in o.regions
                       for block in region.blocks for a in block.arguments)
    seen = set(used)
    for o in inner:
        for v in o.operands:
            if v not in made_inside and v not in seen:
                seen.add(v)
                used.append(v)
    return used


def isolation_key(op: Any) -> str:
    """Ops with the same name, result types, attributes and operands (types, or the text of
    constant ones) behave the same when lowered alone. An op with regions counts by its body
    too (printed: such ops are few)."""
    operation = op.operation
    parts = [op_name(op), str([str(r.type) for r in operation.results])]
    if len(operation.regions):
        parts.append(hashlib.sha1(str(operation).encode()).hexdigest())
    attrs = operation.attributes
    for i in range(len(attrs)):  # iterating yields names only in some binding versions
        named = attrs[i]
        if not named.name.startswith("torch_mlir_lens."):  # our own tags
            parts.append(f"{named.name}={named.attr}")
    parts.extend(_operand_key(v) for v in operation.operands)
    key = "|".join(parts)
    if len(key) > _LONG_KEY:
        key = key[:200] + "#" + hashlib.sha1(key.encode()).hexdigest()
    return key


class _Copy:
    """Old values → new ones while a function is filled."""

    def __init__(self) -> None:
        self.pairs: list[tuple[Any, Any]] = []

    def get(self, value: Any) -> Any | None:
        return next((new for old, new in self.pairs if old == value), None)

    def add(self, old: Iterable[Any], new: Iterable[Any]) -> None:
        self.pairs.extend(zip(old, new, strict=True))

    def clone(self, operation: Any) -> Any:
        """A copy of `operation` at the insertion point, its operands and the values its body
        takes from above mapped (copying the constants and lists it uses first)."""
        operands = [self.value(v) for v in operation.operands]
        from_above = {v: self.value(v) for v in _used_values(operation)[len(operands):]}
        clone = operation.clone()
        for i, new in enumerate(operands):
            clone.operands[i] = new
        for inner in nested_ops(clone) if from_above else []:
            for i, v in enumerate(inner.operands):
                if v in from_above:
                    inner.operands[i] = from_above[v]
        self.add(operation.results, clone.results)
        return clone

    def value(self, value: Any) -> Any:
        found = self.get(value)
        if found is not None:
            return found
        owner = _owner(value)
        if owner is None:
            raise KeyError("a block argument that is not an argument of the copy")
        self.clone(owner.operation)
        return self.get(value)


def _arguments(operation: Any) -> list[Any]:
    """The values `operation` uses that are made elsewhere (a built list's elements)."""
    args: list[Any] = []

    def need(value: Any) -> None:
        if is_constant(_owner(value)) or any(value == a for a in args):
            return
        built = _built_list(value)
        if built is not None:
            for element in built.operands:
                need(element)
        else:
            args.append(value)

    for v in _used_values(operation):
        need(v)
    return args


def _add_function(module: Any, op: Any, name: str) -> None:
    """Append to `module` a function `name` holding a copy of `op`."""
    operation = op.operation
    args = _arguments(operation)
    results = [r for r in operation.results if str(r.type).startswith("!torch.vtensor")]
    with op.context, ir.Location.unknown(op.context), ir.InsertionPoint(module.body):
        ftype = ir.FunctionType.get([a.type for a in args], [r.type for r in results])
        fn = func_d.FuncOp(name, ftype)
        block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            copy = _Copy()
            copy.add(args, block.arguments)
            clone = copy.clone(operation)
            kept = [clone.results[i] for i, r in enumerate(operation.results)
                    if any(r == k for k in results)]
            func_d.ReturnOp(kept)


def isolate(op: Any) -> Any:
    """A new module whose one function holds a copy of `op`: its tensor results returned,
    values made elsewhere as arguments, constants and lists of values rebuilt inside."""
    with op.context, ir.Location.unknown(op.context):
        module = ir.Module.create()
    _add_function(module, op, "isolated")
    return module


def _errors(module: Any, target: str) -> list[Diag] | None:
    """`target`'s whole backend pipeline (for "torch", torch-mlir's own pipeline to the
    backend contract) on a small module: None when it lowers, else its errors.

    When passes are guarded (a listing that crashed is run again so), the run forks: an op
    that kills torch-mlir alone (TOSA's adaptive max-pool: SIGFPE) is a culprit of its own,
    "torch-mlir crashed (SIGFPE) in TOSA's pipeline on it alone", not the listing's end."""
    pipeline = TORCH_BACKEND_PIPELINE if target == "torch" else BACKEND_PIPELINES[target]
    if not crash_guard.guarding_passes():
        return pipeline_errors(module, pipeline)
    try:
        return crash_guard.run_forked(lambda: pipeline_errors(module, pipeline),
                                      step=f"{target_title(target)}'s pipeline on it alone")
    except crash_guard.Crash as crash:
        return [Diag("error", crash.message(), "loc(unknown)")]


def run_alone(module: Any, target: str) -> str:
    """`target`'s pipeline on a small module: LOWERS or the first error line."""
    errors = _errors(module, target)
    return LOWERS if errors is None else (first_line(errors[0].message) or "failed")


def first_line(message: str) -> str:
    """A diagnostic's first line without the op it dumps."""
    return message.split("\n", 1)[0].split(": %", 1)[0].strip()


class VerdictCache:
    """Verdicts per (isolation key, backend), oldest dropped first beyond `size`."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._verdicts: BoundedCache[tuple[str, str], str] = BoundedCache(size)
        self.runs = 0

    @property
    def hits(self) -> int:
        return self._verdicts.hits

    def get(self, key: str, target: str) -> Verdict:
        return self._verdicts.get((key, target))

    def peek(self, key: str, target: str) -> Verdict:
        """The verdict if known, without counting a hit."""
        return self._verdicts.peek((key, target))

    def put(self, key: str, target: str, verdict: str) -> None:
        self._verdicts.put((key, target), verdict)

    def __len__(self) -> int:
        return len(self._verdicts)


def worker_verdicts() -> VerdictCache:
    """The worker's verdicts (one process, one job at a time)."""
    return WORKER.part(VerdictCache)


BATCH_MIN = 4  # fewer ops than this are tried one by one
MAX_BATCH_RUNS = 12  # then the ops still undecided are tried one by one
_LEGALIZE = re.compile(r"failed to legalize operation '([^']+)'")


@dataclass
class _Item:
    key: str
    op: Any  # a handle into the caller's module (never run on: it stays valid)
    name: str
    location: str


def _in_batches(items: list[_Item], target: str, deadline: float | None,
                cache: VerdictCache) -> list[_Item]:
    """Decide many ops with few pipeline runs: each op in a function of one module. A run
    that lowers decides all; one that fails names the op it failed on, which is then tried
    alone (its verdict stands for it) and left out of the next run. The ops left (an error
    naming none of them, too many runs) are returned, to be tried one by one."""
    remaining = list(items)
    for _run in range(MAX_BATCH_RUNS):
        if len(remaining) < BATCH_MIN or (deadline is not None
                                         and time.perf_counter() > deadline):
            break
        with remaining[0].op.context, ir.Location.unknown(remaining[0].op.context):
            module = ir.Module.create()
        for i, item in enumerate(remaining):
            _add_function(module, item.op, f"isolated_{i}")
        errors = _errors(module, target)
        cache.runs += 1
        if errors is None:
            for item in remaining:
                cache.put(item.key, target, LOWERS)
            return []
        named = {(m.group(1), d.location) for d in errors if (m := _LEGALIZE.search(d.message))}
        blamed = [item for item in remaining if (item.name, item.location) in named]
        if not blamed:
            break
        for item in blamed:
            cache.put(item.key, target, run_alone(isolate(item.op), target))
            cache.runs += 1
        remaining = [item for item in remaining if cache.peek(item.key, target) is None]
    return remaining


def verdicts(ops: Sequence[Any], target: str, budget_s: float | None = None,
             cache: VerdictCache | None = None) -> tuple[list[Verdict], bool]:
    """Whether each op of `ops` (of one module, which no pass runs on meanwhile) lowers alone
    on `target`: LOWERS, the backend's message, or UNKNOWN (it cannot be copied out, or
    `budget_s` ran out); and whether every op got a try (False: the budget ran out). Ops not
    decided yet are tried in batches first (`_in_batches`), then one by one."""
    cache = worker_verdicts() if cache is None else cache
    deadline = None if budget_s is None else time.perf_counter() + budget_s
    keys = [isolation_key(op) for op in ops]
    pending: dict[str, _Item] = {}
    for key, op in zip(keys, ops, strict=True):
        if key not in pending and cache.get(key, target) is None:
            pending[key] = _Item(key, op, op_name(op), str(op.location))
    buildable: list[_Item] = []
    for item in pending.values():
        try:  # a copy that cannot be made gets no verdict rather than a guess
            isolate(item.op)
            buildable.append(item)
        except (RuntimeError, ValueError, KeyError, IndexError):
            continue
    complete = True
    for item in _in_batches(buildable, target, deadline, cache):
        if deadline is not None and time.perf_counter() > deadline:
            complete = False
            break
        cache.put(item.key, target, run_alone(isolate(item.op), target))
        cache.runs += 1
    found = [cache.peek(key, target) for key in keys]
    # A failure says why: the backend's words, else a rule's reading of the op (its types).
    return [explained(v, op, target, key, _lowers_as(op, target)) if v else v
            for v, op, key in zip(found, ops, keys, strict=True)], complete


def _lowers_as(op: Any, target: str) -> Callable[[Callable[[str], str]], bool]:
    """Whether `op` lowers alone on `target` once its IR text is changed by a function (a
    likely reason checked: f64 made f32, dynamic sizes made static)."""
    def lowers(change: Callable[[str], str]) -> bool:
        try:
            module = ir.Module.parse(change(str(isolate(op))), context=op.context)
        except Exception:  # the text cannot be changed so: nothing is checked
            return False
        return run_alone(module, target) == LOWERS

    return lowers


__all__ = ["LOWERS", "UNKNOWN", "Verdict", "VerdictCache", "first_line", "is_constant",
           "isolate", "isolation_key", "run_alone", "verdicts", "worker_verdicts"]

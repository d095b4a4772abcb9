"""Why a backend refuses an op: its own message when it gives one, else a rule's (rules/refusals).

    op_facts(op)                      → OpFacts: the op's name, types and constant operands
    explained(verdict, op, backend)   → the verdict with the reason a rule finds, when the
                                        backend said only "failed to legalize"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch_mlir import ir

from torch_mlir_lens.rules.refusals import OpFacts, dynamic_fact, explains, reasons
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.worker.process import WORKER


def _constant(value: Any) -> str | None:
    """The printed value of a constant operand (`torch.constant.*`), else None."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    name = str(owner.operation.name)
    if not name.startswith("torch.constant."):
        return None
    if name == "torch.constant.none":
        return "None"
    attrs = owner.operation.attributes
    if "value" not in attrs:
        return None
    attr = attrs["value"]
    for kind in (ir.BoolAttr, ir.IntegerAttr, ir.FloatAttr):
        try:
            read = kind(attr).value
        except (ValueError, TypeError):
            continue
        return ("true" if read else "false") if isinstance(read, bool) else str(read)
    return str(attr)


def op_facts(op: Any) -> OpFacts:
    """What the refusal rules read of an op of the Torch dialect."""
    operation = op.operation
    name = str(operation.name)
    if name == "torch.operator" and "name" in operation.attributes:
        name = ir.StringAttr(operation.attributes["name"]).value
    return OpFacts(
        name=name.removeprefix("torch."),
        operands=tuple(str(v.type) for v in operation.operands),
        results=tuple(str(r.type) for r in operation.results),
        constants=tuple(_constant(v) for v in operation.operands),
    )


_CHECKED_SIZE = 5000


def _checked() -> BoundedCache[tuple[str, str, bool], str]:
    """(op key, backend, whether the backend said why) → reason."""
    return WORKER.cache(f"{__name__}.checked", _CHECKED_SIZE)


# Whether the op lowers alone once its IR text is changed so (op_isolation provides it).
LowersAs = Callable[[Callable[[str], str]], bool]


def explained(verdict: str, op: Any, backend: str, key: str | None = None,
              lowers_as: LowersAs | None = None) -> str:
    """A failing verdict (the backend's first error line) with the reason said: a likely cause
    the op lowers without (`lowers_as`; without it such clauses are not said), else the
    backend's own words when it says why, else a fact of the backend a rule finds in the op.
    `key` (the op's isolation key) keeps the answer per op."""
    own = explains(verdict)
    cache_key = (key, backend, own) if key is not None else None
    checked = _checked()
    found = checked.get(cache_key) if cache_key is not None else None
    if found is None:
        try:
            found = _reason(verdict, op, backend, own, lowers_as)
        except Exception:  # an op whose operands cannot be read: no reason, the verdict stands
            return verdict
        if cache_key is not None:
            checked.put(cache_key, found)
    return found or verdict


def _reason(verdict: str, op: Any, backend: str, own: bool, lowers_as: LowersAs | None) -> str:
    """The reason `explained` adds to `verdict` ("" for none)."""
    # The backend's own words stand, unless a likely cause is proven (the op lowers alone
    # without it): a verifier's complaint about an op the conversion made ("operand and
    # result must have the same size") says less than "its result has a dynamic size",
    # shown to be the cause.
    facts = op_facts(op)
    found = next((said for said, instead in reasons(facts, backend)
                  if (instead is None and not own)
                  or (instead is not None and lowers_as is not None and lowers_as(instead))),
                 "")
    fact = dynamic_fact(facts) if own and not found and backend == "tosa" else None
    if fact and not _names_types(verdict):
        # A verifier's words about an op the conversion made ("operand and result must have
        # the same size and dtype") say nothing of this op's types: the dynamic size it has
        # is said beside them, not as the proven cause.
        found = f"{fact}, and {target_title(backend)}'s conversion fails: {verdict}"
    return found


def _names_types(message: str) -> bool:
    """Whether a backend's message names a type or size (`tensor<...>`, `K=3`)."""
    return "tensor<" in message or "=" in message


__all__ = ["LowersAs", "explained", "op_facts"]

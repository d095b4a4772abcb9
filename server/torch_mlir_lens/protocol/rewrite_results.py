"""What the worker's proof of rewrites answers (data only: no torch, no I/O).

A `rewrites` job tries, for each op a backend rejects, the candidate rewrites of
worker/rewrites/ and proves them: the rewritten op lowers alone on that backend, it matches the
op on the values that reach it on the example inputs and on edge cases of its domain, and the
whole module rewritten lowers further and matches eager PyTorch when run. Only a `RewriteOffer`
with `verified` names rewrites a user may be offered.

    Accuracy       the largest errors over some compared values
    RewriteCheck   one candidate tried on one culprit: passed, or why not
    RewriteOffer   one culprit (diagnostic) on one backend: the verified rewrites, or why none
    RewriteReport  a module's offers, every backend
    at_export(name) whether a rewrite name acts at export (a pin, the specialised export)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# The rewrites that act at export, before any program, for every backend at once: a pin
# (worker/rewrites/pins.py) and the export specialised to the example (specialize.py).
PIN_PREFIX = "pin."
SPECIALIZE = "export.specialize"


def at_export(name: str) -> bool:
    """Whether a rewrite name acts at export, past an export refusal: a pin
    (`pin.vq.initted`) or the export specialised to the example (`export.specialize`), as
    opposed to a rewrite of an op for a backend."""
    return (name.startswith(PIN_PREFIX) and len(name) > len(PIN_PREFIX)) or name == SPECIALIZE


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


@dataclass
class Accuracy:
    """The largest absolute and relative errors over `values` compared elements."""

    max_abs: float
    max_rel: float
    values: int

    @classmethod
    def from_json(cls, data: Any) -> Accuracy | None:
        if not isinstance(data, dict):
            return None
        return cls(_number(data.get("max_abs")) or 0.0, _number(data.get("max_rel")) or 0.0,
                   int(data.get("values") or 0))


@dataclass
class RewriteCheck:
    """One candidate rewrite tried on one culprit op."""

    rewrite: str  # its name, as `rewrites=NAME@backend` writes it
    op: str  # the culprit op it was tried on (`aten.erfinv`)
    method: str
    source: str  # "library", "torch._decomp", "torch._refs"
    ok: bool  # it lowers alone and matches the op (the module's proof is the offer's)
    why: str = ""  # why not, when not ok
    examples: Accuracy | None = None  # on the values reaching the op on the example inputs
    edges: Accuracy | None = None  # on edge cases of its domain
    edge_cases: int = 0  # edge-case inputs tried
    # Other rewrites it needs (the ops its own decomposition makes that the backend rejects)
    with_rewrites: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RewriteCheck:
        return cls(rewrite=str(data.get("rewrite") or ""), op=str(data.get("op") or ""),
                   method=str(data.get("method") or ""), source=str(data.get("source") or ""),
                   ok=data.get("ok") is True, why=str(data.get("why") or ""),
                   examples=Accuracy.from_json(data.get("examples")),
                   edges=Accuracy.from_json(data.get("edges")),
                   edge_cases=int(data.get("edge_cases") or 0),
                   with_rewrites=[str(r) for r in data.get("with_rewrites") or []])


@dataclass
class RewriteOffer:
    """The answer for one culprit of one backend: the rewrites that take the module past it
    (proven), or why there are none."""

    target: str
    file: str | None
    line: int | None
    op: str  # the culprit's primary op (`aten.erfinv`)
    ops: list[str]  # every op of the culprit
    cause: str  # as the diagnostic names it
    rewrites: list[str] = field(default_factory=list)  # their names; [] when none is offered
    verified: bool = False  # the whole module rewritten lowers further and matches eager
    verify: str = ""  # Verify's verdict on the module rewritten ("✓ matches eager ...")
    max_abs: float | None = None  # the worst of its rewrites' errors on the example inputs
    max_rel: float | None = None
    why: str = ""  # why nothing is offered
    checks: list[RewriteCheck] = field(default_factory=list)  # every candidate tried

    @property
    def offered(self) -> bool:
        """Whether a user may be offered these rewrites: all proven."""
        return self.verified and bool(self.rewrites)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RewriteOffer:
        return cls(
            target=str(data.get("target") or ""), file=data.get("file"), line=data.get("line"),
            op=str(data.get("op") or ""), ops=[str(o) for o in data.get("ops") or []],
            cause=str(data.get("cause") or ""),
            rewrites=[str(r) for r in data.get("rewrites") or []],
            verified=data.get("verified") is True, verify=str(data.get("verify") or ""),
            max_abs=_number(data.get("max_abs")), max_rel=_number(data.get("max_rel")),
            why=str(data.get("why") or ""),
            checks=[RewriteCheck.from_json(c) for c in data.get("checks") or []
                    if isinstance(c, dict)],
        )


@dataclass
class RewriteReport:
    """A module's offers on every backend asked for."""

    module: str
    offers: list[RewriteOffer] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "offers": [o.to_json() for o in self.offers],
                "timings": dict(self.timings)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RewriteReport:
        return cls(module=str(data.get("module") or ""),
                   offers=[RewriteOffer.from_json(o) for o in data.get("offers") or []
                           if isinstance(o, dict)],
                   timings={k: float(v) for k, v in (data.get("timings") or {}).items()
                            if isinstance(v, int | float)})

    def for_target(self, target: str) -> list[RewriteOffer]:
        return [o for o in self.offers if o.target == target]


__all__ = ["PIN_PREFIX", "SPECIALIZE", "Accuracy", "RewriteCheck", "RewriteOffer",
           "RewriteReport", "at_export"]

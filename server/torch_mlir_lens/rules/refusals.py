"""Why a backend refuses an op, when torch-mlir does not say (no torch, no MLIR).

torch-mlir's conversions mostly answer "failed to legalize operation 'torch.aten.slice.Tensor'"
and keep their reason in a debug log. What decides is usually visible in the op as the Torch
dialect holds it: its operand and result types and its constant operands. Each rule below reads
those facts (`OpFacts`, filled by worker/culprits/reasons.py from the op lowered alone) and
names the one that the backend cannot take: a zero-sized result on TOSA, a dynamic size, a
64-bit float, a grouped convolution, `antialias=True`.

A rule speaks only of an op that failed alone: it explains a verdict, it never makes one. A
reason that is a fact of the backend (TOSA has no zero-sized tensors) stands as it is; one that
is only likely (a dynamic size, a 64-bit float) comes with the types the op would have
without it (`Refusal.instead`), and the worker keeps it only when the op lowers alone so
(worker/culprits/reasons.py). tests/rules/test_refusals.py checks each rule's words,
tests/worker/test_refusal_reasons.py sees them in real lowerings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_VTENSOR = re.compile(r"^!torch\.vtensor<\[([^\]]*)\],(.+)>$")


@dataclass(frozen=True)
class OpFacts:
    """An op as a rule reads it: names and types as the Torch dialect prints them."""

    name: str  # "aten.slice.Tensor" (without the dialect's `torch.` prefix)
    operands: tuple[str, ...]  # each operand's type: "!torch.vtensor<[2,0],f32>", "!torch.int"
    results: tuple[str, ...]
    constants: tuple[str | None, ...]  # each operand's constant value ("4", "true"), or None


@dataclass(frozen=True)
class Tensor:
    """A `!torch.vtensor` type: its sizes (None: dynamic) and element type."""

    sizes: tuple[int | None, ...]
    dtype: str

    @property
    def builtin(self) -> str:
        """As the backend's IR prints it: `tensor<1x4x16x0xf32>`."""
        dims = "x".join("?" if s is None else str(s) for s in self.sizes)
        return f"tensor<{dims}x{self.dtype}>" if dims else f"tensor<{self.dtype}>"


def tensor_type(text: str) -> Tensor | None:
    """A `!torch.vtensor<[2,?],f32>` type read, or None for any other type."""
    m = _VTENSOR.match(text.strip())
    if m is None:
        return None
    sizes = tuple(None if s.strip() in ("?", "-1") else int(s) for s in m.group(1).split(",")
                  if s.strip())
    return Tensor(sizes, m.group(2).strip())


def _tensors(facts: OpFacts) -> list[tuple[str, Tensor]]:
    """("its result" / "its operand", tensor) for each tensor the op makes or takes."""
    out = [("its result", t) for t in map(tensor_type, facts.results) if t is not None]
    out += [("its operand", t) for t in map(tensor_type, facts.operands) if t is not None]
    return out


def _zero_sized(facts: OpFacts) -> str | None:
    for role, t in _tensors(facts):
        if 0 in t.sizes:
            return f"TOSA has no zero-sized tensors, and {role} is `{t.builtin}`"
    return None


def _dynamic(facts: OpFacts) -> str | None:
    for role, t in _tensors(facts):
        if None in t.sizes:
            return (f"{role} `{t.builtin}` has a dynamic size, which TOSA's conversion of it "
                    "does not take")
    return None


def dynamic_fact(facts: OpFacts) -> str | None:
    """The fact alone, without saying it is the cause: "its result `tensor<2x?xsi64>` has a
    dynamic size" (said beside a backend's own words that do not name the op's types)."""
    for role, t in _tensors(facts):
        if None in t.sizes:
            return f"{role} `{t.builtin}` has a dynamic size"
    return None


def _f64(facts: OpFacts) -> str | None:
    for role, t in _tensors(facts):
        if t.dtype == "f64":
            return f"TOSA has no 64-bit floats, and {role} is `{t.builtin}`"
    return None


def _complex(facts: OpFacts) -> str | None:
    for role, t in _tensors(facts):
        if t.dtype.startswith("complex"):
            return f"TOSA has no complex numbers, and {role} is `{t.builtin}`"
    return None


_CONVOLUTIONS = {"aten.convolution": 8, "aten._convolution": 8, "aten._convolution.deprecated": 8,
                 "aten.conv1d": 6, "aten.conv2d": 6, "aten.conv3d": 6}


def _grouped(facts: OpFacts) -> str | None:
    index = _CONVOLUTIONS.get(facts.name)
    if index is None or index >= len(facts.constants):
        return None
    groups = facts.constants[index]
    if groups is not None and groups.lstrip("-").isdigit() and int(groups) > 1:
        return f"a grouped convolution (groups={groups}), which its conversion does not take"
    return None


def _antialias(facts: OpFacts) -> str | None:
    if facts.name.endswith("_aa") or facts.name.endswith("_aa.vec"):
        return "`antialias=True`: torch-mlir has no antialiased resampling"
    if facts.name.startswith("aten.__interpolate") and "true" in facts.constants[5:6]:
        return "`antialias=True`: torch-mlir has no antialiased resampling"
    return None


# Scatters that add or reduce into their target, and where their `accumulate` / `reduce`
# operand is. torch-mlir 20261001 converts none of them to TOSA (whose one scatter,
# `tosa.scatter`, writes values in place), and of them only `scatter_add` (and `index_put`) to
# StableHLO: `scatter_reduce` goes through TMTensor, which only the Linalg path has.
_ACCUMULATING = {"aten.scatter_add": None, "aten.scatter_add_": None, "aten.index_add": None,
                 "aten.index_add_": None, "aten.scatter_reduce.two": 4,
                 "aten.scatter_reduce_.two": 4, "aten.scatter.reduce": 4,
                 "aten.scatter.value_reduce": 4}
_ACCUMULATE_FLAG = {"aten.index_put": 3, "aten.index_put.hacked_twin": 3, "aten.index_put_": 3,
                    "aten.index_put_.hacked_twin": 3, "aten._index_put_impl": 3,
                    "aten._index_put_impl_": 3}


def _how(facts: OpFacts) -> str | None:
    """How a scatter accumulates (`reduce="amax"`, `accumulate=True`, adds), None if not."""
    if facts.name in _ACCUMULATING:
        index = _ACCUMULATING[facts.name]
        reduce = facts.constants[index] if index is not None and index < len(
            facts.constants) else None
        if reduce in (None, "None"):
            return "adds"
        return f'`reduce="{reduce.strip(chr(34))}"`'
    index = _ACCUMULATE_FLAG.get(facts.name)
    if index is not None and index < len(facts.constants) and facts.constants[index] == "true":
        return "`accumulate=True`"
    return None


def _tosa_scatter(facts: OpFacts) -> str | None:
    how = _how(facts)
    if how is None:
        return None
    verb = "adds into its target" if how == "adds" else f"accumulates ({how})"
    return (f"it {verb}: TOSA's one scatter, `tosa.scatter`, writes values in place, and "
            f"torch-mlir has no TOSA conversion of an accumulating `{facts.name}`")


def _stablehlo_scatter(facts: OpFacts) -> str | None:
    if not facts.name.startswith(("aten.scatter_reduce", "aten.scatter.reduce",
                                  "aten.scatter.value_reduce")):
        return None
    how = _how(facts) or "reduces"
    return (f"it reduces ({how}): torch-mlir's StableHLO conversion has `scatter` and "
            f"`scatter_add` only, not `{facts.name}`")


def _runtime_assert(backend: str) -> Callable[[OpFacts], str | None]:
    def says(facts: OpFacts) -> str | None:
        if facts.name != "runtime.assert":
            return None
        return (f"a check torch.export added to run with the module (`torch._check`, or the "
                f"bounds of a size computed from data), which torch-mlir's {backend} pipeline "
                f"has no conversion for")
    return says


_SCALARS = ("!torch.int", "!torch.float", "!torch.bool", "!torch.number")


def _scalar(facts: OpFacts) -> str | None:
    if facts.name.startswith("runtime.") or not facts.results:
        return None
    for role, types in (("its result", facts.results), ("its operand", facts.operands)):
        for i, text in enumerate(types):
            kind = text.strip()
            if kind in _SCALARS and (role == "its result" or facts.constants[i] is None):
                word = kind.removeprefix("!torch.")
                return (f"TOSA works on tensors only, and {role} is a Python `{word}` "
                        f"computed at run time (from a tensor's value or a dynamic size)")
    return None


# Element-wise math TOSA 1.0 has no operation for (its trigonometry is `sin`, `cos`, `tanh`,
# `erf`, ...) and that torch-mlir's TOSA conversion does not build from others.
_NO_TOSA_OP = {"aten.asin", "aten.acos", "aten.atan2", "aten.sinh", "aten.cosh", "aten.asinh",
               "aten.acosh", "aten.atanh"}


def _tosa_math(facts: OpFacts) -> str | None:
    if facts.name not in _NO_TOSA_OP:
        return None
    name = facts.name.removeprefix("aten.")
    return (f"TOSA has no `{name}` operation, and torch-mlir's TOSA conversion does not build "
            "it from others")


def _static(text: str) -> str:
    """The op's IR text with every dynamic size made 4."""
    return re.sub(r"(?<=[\[,])\?(?=[,\]])", "4", text)


def _f32(text: str) -> str:
    """The op's IR text with 64-bit floats made 32-bit."""
    return re.sub(r"\bf64\b", "f32", text)


@dataclass(frozen=True)
class Refusal:
    """A rule: the clause it says of an op, and, when that is only likely, the op's IR text
    as it would be without the cause (to be lowered alone as a check)."""

    says: Callable[[OpFacts], str | None]
    instead: Callable[[str], str] | None = None


# backend → its rules, most telling first: the first that applies (and holds) is the reason.
RULES: dict[str, tuple[Refusal, ...]] = {
    "tosa": (Refusal(_zero_sized), Refusal(_complex), Refusal(_grouped), Refusal(_antialias),
             Refusal(_tosa_scatter), Refusal(_runtime_assert("TOSA")), Refusal(_scalar),
             Refusal(_tosa_math), Refusal(_f64, _f32), Refusal(_dynamic, _static)),
    # Linalg and StableHLO have complex numbers: fft and friends fail there for other reasons.
    "stablehlo": (Refusal(_grouped), Refusal(_antialias), Refusal(_stablehlo_scatter),
                  Refusal(_runtime_assert("StableHLO"))),
    "linalg": (Refusal(_grouped), Refusal(_antialias)),
}


def reasons(facts: OpFacts, backend: str) -> list[tuple[str, Callable[[str], str] | None]]:
    """Every clause the rules say of the op on `backend`, most telling first, each with the
    op's text without its cause when the clause needs that check."""
    out = []
    for rule in RULES.get(backend, ()):
        found = rule.says(facts)
        if found:
            out.append((found, rule.instead))
    return out


def reason(facts: OpFacts, backend: str) -> str | None:
    """The first clause the rules say ("TOSA has no zero-sized tensors, and its result is
    `tensor<2x0xf32>`"), unchecked; None when no rule knows."""
    found = reasons(facts, backend)
    return found[0][0] if found else None


def explains(message: str) -> bool:
    """Whether a backend's own message says why (not only "failed to legalize")."""
    text = message.strip()
    return bool(text) and "failed to legalize operation" not in text


__all__ = ["RULES", "OpFacts", "Refusal", "Tensor", "dynamic_fact", "explains", "reason",
           "reasons", "tensor_type"]

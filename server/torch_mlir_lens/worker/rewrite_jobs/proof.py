"""Proof before offer: a rewrite is offered only when all three steps hold.

(a) alone: the op (with the nodes the rewrite acts on around it, capture.region) is cut out of
    the program as a small one, rewritten, and lowered on the backend by the product's own
    pipeline: it lowers;
(b) values: the small program, rewritten, run eagerly in PyTorch, matches the op on the values
    that reach it on the example inputs, and on edge cases of its domain (±0, ±1, infinities,
    NaN, the dtype's extremes, its smallest normal and denormal numbers, the rewrite's own
    domain ends) put in each floating input in turn, within Verify's tolerances for the dtype;
    non-finite values must be the same. An edge case the op itself rejects (raises) is skipped;
(c) module: the whole module, rewritten, lowers on the backend past the culprit, and Verify
    (its IR run on LLVM: the backend's own IR converted to Linalg, or Linalg's when the backend
    still rejects another op) matches eager PyTorch.

    Prover(lowerer, fn, args, kwargs).alone(rewrite, culprit, file, line, backend) → RewriteCheck
    Prover(...).module(rewrites, backend)                         → ModuleProof

Verdicts of (a) are kept per (rewrite, cut-out program, backend) for the worker's lifetime, as
op_isolation keeps an op's.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LowerResult
from torch_mlir_lens.protocol.rewrite_results import Accuracy, RewriteCheck
from torch_mlir_lens.protocol.verify_results import VerifyResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.targets import target_title
from torch_mlir_lens.system.bounded_cache import BoundedCache
from torch_mlir_lens.worker.process import WORKER
from torch_mlir_lens.worker.rewrites import apply, capture
from torch_mlir_lens.worker.rewrites.table import Rewrite, table_of

MAX_NODES = 4  # distinct uses of one op tried alone (a model repeats the same call per layer)
_ALONE_SIZE = 2000


def _alone() -> BoundedCache[tuple[str, str, str], tuple[str, list[str]]]:
    """(a)'s verdicts: ("" when it lowers, else why; the ops still rejected)."""
    return WORKER.cache(f"{__name__}.alone", _ALONE_SIZE)


# --- comparing values -------------------------------------------------------------------------


@dataclass
class Errors:
    """Errors over compared values; `bad` of them beyond tolerance, the first described."""

    max_abs: float = 0.0
    max_rel: float = 0.0
    values: int = 0
    bad: int = 0
    first_bad: str = ""

    def add(self, other: Errors) -> None:
        self.max_abs = max(self.max_abs, other.max_abs)
        self.max_rel = max(self.max_rel, other.max_rel)
        self.values += other.values
        self.bad += other.bad
        self.first_bad = self.first_bad or other.first_bad

    def accuracy(self) -> Accuracy:
        return Accuracy(self.max_abs, self.max_rel, self.values)


def compare(expected: Any, got: Any) -> Errors:
    """Elementwise errors of `got` against `expected` (tensors, or tuples of them), within
    Verify's per-dtype tolerances; NaN must meet NaN and an infinity the same infinity."""
    from torch_mlir_lens.worker.verify.compare import default_tolerances

    exp = list(expected) if isinstance(expected, tuple | list) else [expected]
    out = list(got) if isinstance(got, tuple | list) else [got]
    errors = Errors()
    if len(exp) != len(out):
        errors.bad, errors.first_bad = 1, f"{len(out)} results where the op has {len(exp)}"
        return errors
    for e, g in zip(exp, out, strict=True):
        if not isinstance(e, torch.Tensor) or not isinstance(g, torch.Tensor):
            continue
        if e.shape != g.shape or e.dtype != g.dtype:
            errors.bad += 1
            errors.first_bad = errors.first_bad or (
                f"a {list(g.shape)} {g.dtype} result where the op's is {list(e.shape)} {e.dtype}")
            continue
        errors.add(_elementwise(e, g, *default_tolerances(e.dtype)))
    return errors


def _elementwise(e: torch.Tensor, g: torch.Tensor, rtol: float, atol: float) -> Errors:
    if e.numel() == 0:
        return Errors()
    if not (e.dtype.is_floating_point or e.dtype.is_complex):
        diff = (e.to(torch.float64) - g.to(torch.float64)).abs()
        bad = int((diff > 0).sum())
        worst = float(diff.max())
        first = "" if not bad else f"{bad} of {e.numel()} values differ (by up to {worst:g})"
        return Errors(worst, 0.0 if not bad else math.inf, e.numel(), bad, first)
    e64, g64 = e.to(torch.float64), g.to(torch.float64)
    finite = torch.isfinite(e64) & torch.isfinite(g64)
    same_special = (torch.isnan(e64) & torch.isnan(g64)) | (
        torch.isinf(e64) & (e64 == g64))
    diff = torch.where(finite, (g64 - e64).abs(), torch.zeros_like(e64))
    rel = torch.where(finite & (e64 != 0), diff / e64.abs(), torch.zeros_like(e64))
    beyond = finite & (diff > atol + rtol * e64.abs())
    special_mismatch = ~finite & ~same_special
    bad_mask = beyond | special_mismatch
    bad = int(bad_mask.sum())
    first = ""
    if bad:
        i = int(bad_mask.flatten().nonzero()[0])
        first = (f"{bad} of {e.numel()} values differ, e.g. {g64.flatten()[i].item():.7g} "
                 f"where the op gives {e64.flatten()[i].item():.7g}")
    return Errors(float(diff.max()), float(rel.max()), e.numel(), bad, first)


# --- edge cases ------------------------------------------------------------------------------


def edge_values(dtype: torch.dtype, domain: Sequence[float] = (), extremes: bool = True,
                nonfinite: bool = True) -> list[float]:
    """Edge cases of a floating dtype: ±0, ±1, ±0.5, ±2, infinities and NaN, the largest
    finite values (each unless the rewrite's domain leaves them out: `nonfinite`,
    `extremes`), the smallest normal and denormal ones, 1 ∓ epsilon, then `domain`'s own."""
    info = torch.finfo(dtype)
    below_one = 1.0 - info.eps / 2
    denormal = info.tiny * info.eps
    largest = [info.max, -info.max] if extremes else []
    special = [math.inf, -math.inf, math.nan] if nonfinite else []
    return [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, *special,
            *largest, info.tiny, -info.tiny, denormal, -denormal,
            below_one, -below_one, 1.0 + info.eps, -1.0 - info.eps, *domain]


def _chunks(values: list[float], size: int, most: int = 8) -> list[list[float]]:
    """The edge values in runs of `size` (an input's element count), so that a small input
    still meets every one of them (at most `most` runs)."""
    return [values[i:i + size] for i in range(0, len(values), size)][:most]


def _filled(like: torch.Tensor, values: Sequence[float]) -> torch.Tensor:
    """A tensor of `like`'s shape and dtype holding `values` over and over."""
    base = torch.tensor(values, dtype=torch.float64)
    n = like.numel()
    reps = -(-n // len(base))
    return base.repeat(reps)[:n].reshape(like.shape).to(like.dtype)


# --- the proof -------------------------------------------------------------------------------


@dataclass
class ModuleProof:
    """Step (c) for one backend: the module rewritten, lowered and verified."""

    result: LowerResult | None  # the backend's lowering of the module rewritten
    verify: VerifyResult | None  # None: not verified (`why` says why)
    used: set[str] = field(default_factory=set)  # the rewrites that changed the program
    why: str = ""
    ran_on: str = ""  # whose IR Verify ran: the backend's, or Linalg's when it could not

    @property
    def verified(self) -> bool:
        return self.verify is not None and self.verify.ok

    def still_rejects(self, diag: LensDiagnostic) -> bool:
        """Whether the backend still rejects an op of `diag` at its line."""
        if self.result is None:
            return True
        for d in culprits.culprit_diagnostics(self.result.diagnostics):
            if d.line == diag.line and set(d.ops or [d.op or ""]) & set(
                    diag.ops or [diag.op or ""]):
                return True
        return False


def _quiet() -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    noise = io.StringIO()  # torch prints graph dumps on failed traces
    stack.enter_context(contextlib.redirect_stdout(noise))
    stack.enter_context(contextlib.redirect_stderr(noise))
    return stack


def _signature(cut: capture.Cut, values: Sequence[Any]) -> str:
    metas = [(tuple(v.shape), str(v.dtype)) if isinstance(v, torch.Tensor) else repr(v)
             for v in values]
    return f"{cut.module.code}|{metas}"


class Prover:
    """Proves rewrites on one exported program (its lowerer) and its example inputs."""

    def __init__(self, lowerer: Any, fn: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any] | None = None) -> None:
        self.lowerer = lowerer
        self.fn = fn
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self._values: dict[int, dict[str, Any]] = {}  # id(program) → node name → value
        self._modules: dict[tuple[tuple[str, ...], str], ModuleProof] = {}

    # -- (a) and (b) --------------------------------------------------------------------------

    def alone(self, rewrite: Rewrite, op: str, file: str | None, line: int | None,
              backend: str, program: Any = None) -> RewriteCheck:
        """Steps (a) and (b) for `rewrite` on the op `op` at `file:line`, cut out of
        `program` (default: the program as imported; the one torch.export made, before
        decompositions, holds the calls they took apart)."""
        check = RewriteCheck(rewrite=rewrite.name, op=op, method=rewrite.method,
                             source=rewrite.source, ok=False)
        self.lowerer.raw_module()  # the FX import freezes the program: weights inside
        program = program if program is not None else self.lowerer.program
        nodes = capture.nodes_of(program, op, file, line)
        if not nodes:
            check.why = (f"`{op}` is made by torch-mlir's own decompositions, not by a call "
                         "of the program")
            return check
        cuts: list[capture.Cut] = []
        for node in nodes:
            cut = capture.cut(capture.region(node, rewrite.scope))
            if cut is None:
                check.why = "it takes a size that is not fixed (dynamic): not tried alone"
                return check
            if all(c.module.code != cut.module.code for c in cuts):
                cuts.append(cut)
        examples, edges = Errors(), Errors()
        for cut in cuts[:MAX_NODES]:
            why = self._cut_passes(rewrite, cut, backend, examples, edges, check, program)
            if why:
                check.why = why
                break
        check.examples, check.edges = examples.accuracy(), edges.accuracy()
        check.ok = not check.why
        return check

    def _inputs(self, cut: capture.Cut, program: Any) -> list[Any]:
        values = self._values.setdefault(id(program), {})
        missing = [n.name for n in cut.inputs if n.name not in values]
        if missing:
            values.update(capture.node_values(program, missing, self.args, self.kwargs))
        return [values[n.name] for n in cut.inputs]

    def _cut_passes(self, rewrite: Rewrite, cut: capture.Cut, backend: str, examples: Errors,
                    edges: Errors, check: RewriteCheck, program: Any) -> str:
        """"" when the rewrite passes (a) and (b) on this cut-out program, else why not.

        When the rewritten op leaves ops the backend rejects that other library rewrites
        answer (torch's decomposition of a max-pool's backward makes a scatter_add), those
        join it once and it is tried again: the check then names them (`with_rewrites`)."""
        from torch_mlir.extras.fx_decomp_util import get_decomposition_table

        from torch_mlir_lens.worker.rewrites.library import LIBRARY
        from torch_mlir_lens.worker.shims.custom_ops import run_decompositions

        try:
            values = self._inputs(cut, program)
        except Exception as exc:  # the program does not run eagerly as exported
            return f"the values reaching it could not be taken: {type(exc).__name__}: {exc}"
        together = [rewrite]
        for attempt in range(2):
            try:
                with _quiet():
                    small = torch.export.export(cut.module, tuple(values), strict=False)
                    rewritten = run_decompositions(
                        small, {**get_decomposition_table(), **table_of(together)})
            except Exception as exc:  # a rewrite that cannot be traced
                return f"it cannot be traced: {type(exc).__name__}: " \
                       f"{str(exc).splitlines()[0]}"
            ex, ed = Errors(), Errors()
            why = self._values_match(rewrite, cut, rewritten, values, ex, ed, check)
            if why:
                examples.add(ex)
                edges.add(ed)
                return why
            verdict, left = self._lowers_alone(together, cut, values, rewritten, backend)
            more = [r for r in LIBRARY.values()
                    if r not in together and any(r.answers(op) for op in left)]
            if not verdict or attempt or not more:
                examples.add(ex)
                edges.add(ed)
                if not verdict:
                    check.with_rewrites = [r.name for r in together[1:]]
                return verdict
            together += more
        return ""

    def _values_match(self, rewrite: Rewrite, cut: capture.Cut, rewritten: Any,
                      values: list[Any], examples: Errors, edges: Errors,
                      check: RewriteCheck) -> str:
        run = rewritten.module()
        with torch.no_grad():
            try:
                found = compare(cut.module(*values), run(*values))
            except Exception as exc:
                return f"it fails on the example inputs: {type(exc).__name__}: {exc}"
            examples.add(found)
            if found.bad:
                return f"it differs from the op on the example inputs: {found.first_bad}"
            culprit_inputs = {a for n in cut.module.graph.nodes if n.op == "call_function"
                              for a in n.all_input_nodes if a.op == "placeholder"}
            placeholders = [n for n in cut.module.graph.nodes if n.op == "placeholder"]
            for i, (p, v) in enumerate(zip(placeholders, values, strict=True)):
                if p not in culprit_inputs or not isinstance(v, torch.Tensor) \
                        or not v.dtype.is_floating_point or v.numel() == 0:
                    continue
                edges_of = edge_values(v.dtype, rewrite.domain, rewrite.extremes,
                                       rewrite.nonfinite)
                for chunk in _chunks(edges_of, v.numel()):
                    edge = list(values)
                    edge[i] = _filled(v, chunk)
                    try:
                        expected = cut.module(*edge)
                    except Exception:  # outside the op's own domain: not a case
                        continue
                    check.edge_cases += 1
                    try:
                        found = compare(expected, run(*edge))
                    except Exception as exc:
                        return f"it fails on edge cases: {type(exc).__name__}: {exc}"
                    edges.add(found)
                    if found.bad:
                        return f"it differs from the op on edge cases: {found.first_bad}"
        return ""

    def _lowers_alone(self, together: list[Rewrite], cut: capture.Cut, values: list[Any],
                      rewritten: Any, backend: str) -> tuple[str, list[str]]:
        """("", []) when the rewritten cut-out program lowers on `backend`; else why not and
        the ops the backend still rejects."""
        from torch_mlir_lens.worker.lowering import ProgramLowerer

        names = "+".join(r.name for r in together)
        key = (names, _signature(cut, values), backend)
        found = _alone().get(key)
        if found is None:
            lowerer = ProgramLowerer(rewritten, module_name="rewritten", user_files=[])
            result = lowerer.lower(backend)
            rejected = [culprits.short_op(op) for d in culprits.culprit_diagnostics(
                result.diagnostics) for op in (d.ops or [d.op or ""])]
            found = ("" if result.ok else culprits.summary(result.diagnostics, backend),
                     rejected)
            _alone().put(key, found)
        verdict, rejected = found
        if verdict:
            title = target_title(backend)
            return (f"the rewritten op does not lower alone on {title} "
                    f"({verdict.removeprefix(f'cannot lower to {title}: ')})", rejected)
        return "", []

    # -- (c) ----------------------------------------------------------------------------------

    def module(self, rewrites: list[Rewrite], backend: str) -> ModuleProof:
        """Step (c): the module rewritten, lowered on `backend` and verified (on `backend`'s
        IR when it lowers whole, else on Linalg's when that does)."""
        key = (tuple(sorted(r.name for r in rewrites)), backend)
        if key in self._modules:
            return self._modules[key]
        proof = self._module(rewrites, backend)
        self._modules[key] = proof
        return proof

    def _module(self, rewrites: list[Rewrite], backend: str) -> ModuleProof:
        from torch_mlir_lens.worker.lowering import ProgramLowerer
        from torch_mlir_lens.worker.verify.job import verify_lowerer

        base = self.lowerer
        try:
            with _quiet():
                program, used = apply.rewritten(base.program, rewrites)
        except Exception as exc:
            return ModuleProof(None, None, why=f"the module cannot be decomposed with them: "
                                               f"{type(exc).__name__}: {exc}")
        lowerer = ProgramLowerer(program, module_name=base.module_name,
                                 user_files=base.users.given, module_file=base.module_file,
                                 module_line=base.module_line)
        result = lowerer.lower(backend)
        # The backend's own IR runs when the backend takes the module whole and its IR
        # converts to Linalg (StableHLO's sort does not); else Linalg's, of the same program.
        verify: VerifyResult | None = None
        ran_on = ""
        for run_on in dict.fromkeys(([backend] if result.ok else []) + ["linalg"]):
            if run_on != backend and not lowerer.lower(run_on).ok:
                continue
            verify = verify_lowerer(lowerer, self.fn, self.args, self.kwargs, locate=False,
                                    backend=run_on)
            ran_on = run_on
            if verify.ok or verify.kind == ErrorKind.VERIFY_MISMATCH:  # a verdict
                break
        if verify is None:
            return ModuleProof(result, None, used,
                               why=f"not verified: the module rewritten does not lower whole "
                                   f"on {target_title(backend)} nor on Linalg")
        why = "" if verify.ok else (
            f"the module rewritten does not match eager PyTorch on {target_title(ran_on)}'s "
            f"IR: {verify.message}" if verify.kind == ErrorKind.VERIFY_MISMATCH else
            f"not verified: {verify.message}")
        return ModuleProof(result, verify, used, why, ran_on)


__all__ = ["Errors", "ModuleProof", "Prover", "compare", "edge_values"]

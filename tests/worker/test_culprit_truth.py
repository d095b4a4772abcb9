"""Culprits that are true: each fails alone, names the call it comes from, and has a line.

The modules (tests/worker/models/culprit_cases.py) reproduce what real models showed: a `cat`
of computed tensors reported on TOSA although it lowers, an interpolate named after another
call of its line, an alias called a decomposition, and failures with no line at all (a scalar
result on TOSA, a StableHLO verifier error, a size check torch.export made in its own code, a
type torch-mlir's own pipeline contradicts).
"""

from __future__ import annotations

import os
import re
import runpy
from typing import Any

import pytest
import torch
from bench.culprit_precision import culprit_precision, culprits_lowering_alone
from tests.worker.models import library_calls
from torch import nn
from torch.export import Dim
from torch_mlir import ir

from torch_mlir_lens.protocol.results import LensDiagnostic, LowerResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.worker.culprits import op_isolation
from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "culprit_cases.py")
BACKENDS = ("linalg", "tosa", "stablehlo")
MARK = re.compile(r"#\s*culprit:\s*([\w ]+)$")


def marked() -> dict[int, set[str]]:
    """{line: backends} from the `# culprit:` comments."""
    with open(CASES) as f:
        return {n: set(m.group(1).split()) for n, text in enumerate(f, start=1)
                if (m := MARK.search(text.rstrip()))}


def line_of(text: str) -> int:
    with open(CASES) as f:
        return next(n for n, line in enumerate(f, start=1) if text in line)


class Case:
    """One module of the file: its lowerer and its result on every backend."""

    def __init__(self, ns: dict[str, Any], name: str) -> None:
        args = ns["INPUTS"][name]()
        dynamic = None
        if name in ns["DYNAMIC"]:
            dynamic = {"x": {i: Dim(f"d{i}", min=2, max=64) for i in range(args[0].dim())}}
        program = export_program(ns[name](), args, {}, user_files={CASES},
                                 dynamic_shapes=dynamic)
        self.lowerer = ProgramLowerer(program, module_name=name, user_files={CASES})
        self.results: dict[str, LowerResult] = {t: self.lowerer.lower(t) for t in BACKENDS}
        start = line_of(f"class {name}(")
        ends = [line_of(f"class {n}(") for n in ns["INPUTS"] if line_of(f"class {n}(") > start]
        self.span = (start, min(ends) if ends else 10**6)

    def errors(self, target: str) -> list[LensDiagnostic]:
        return [d for d in self.results[target].diagnostics if d.severity == "error"]


def ops_named(module: Any, name: str) -> list[Any]:
    """The ops of `module` called `name`, nested ones included, in walk order."""
    ops: list[Any] = []

    def visit(op: Any) -> ir.WalkResult:
        if str(op.operation.name) == name:
            ops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return ops


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    ns = runpy.run_path(CASES)
    return {name: Case(ns, name) for name in ns["INPUTS"]}


NAMES = list(runpy.run_path(CASES)["INPUTS"])


@pytest.mark.parametrize("target", BACKENDS)
@pytest.mark.parametrize("name", NAMES)
def test_one_culprit_per_marked_line_and_every_error_located(cases: dict[str, Case], name: str,
                                                            target: str) -> None:
    case = cases[name]
    want = {line for line, backends in marked().items()
            if target in backends and case.span[0] <= line < case.span[1]}
    errors = case.errors(target)
    assert all(d.file == CASES and d.line for d in errors), errors  # a line for every error
    assert {d.line for d in errors} == want, errors
    assert len(errors) == len(want), "one diagnostic per line"
    assert all(d.kind == "unsupported-op" for d in errors), errors
    assert case.results[target].ok == (not want)


def test_cat_of_computed_tensors_lowers_alone_on_tosa(cases: dict[str, Case]) -> None:
    """The timestep embedding's cat: copied out with its list rebuilt inside, it lowers (the
    list itself at the function's boundary is what TOSA could not take). Verdicts are cached."""
    ops = ops_named(cases["TimestepAndUpsample"].lowerer.torch_module(), "torch.aten.cat")
    assert len(ops) == 1
    small = op_isolation.isolate(ops[0])
    assert "!torch.list" not in str(small.body.operations[0].type)  # the function's signature
    cache = op_isolation.VerdictCache()
    assert op_isolation.verdicts(ops, "tosa", cache=cache) == ([op_isolation.LOWERS], True)
    assert (cache.runs, cache.hits) == (1, 0)
    assert op_isolation.verdicts(ops, "tosa", cache=cache)[0] == [op_isolation.LOWERS]
    assert (cache.runs, cache.hits) >= (1, 1) and cache.runs == 1
    # No backend names the cat (nor anything else of the embedding's lines).
    for target in BACKENDS:
        assert all("aten.cat" not in (d.ops or []) for d in cases["TimestepAndUpsample"]
                   .errors(target))


def test_the_call_is_named_from_the_node_the_op_comes_from(cases: dict[str, Case]) -> None:
    """group_norm and interpolate are both rewritten by torch-mlir on one line: the rejected
    `__interpolate` is F.interpolate's, tried by lowering each call alone."""
    for target in ("tosa", "stablehlo"):
        [diag] = cases["TwoCallsOneLine"].errors(target)
        assert diag.cause == "`F.interpolate` (decomposed to " \
                             "`aten.__interpolate.size_list_scale_list`)"
        assert "group_norm" not in diag.message


def test_an_alias_is_not_called_a_decomposition(cases: dict[str, Case]) -> None:
    for target in BACKENDS:
        [diag] = cases["AliasedCall"].errors(target)
        assert diag.cause == "`torch.special.erfinv` (an alias of `aten.erfinv`)"
        assert "decomposed" not in diag.message


def test_an_op_torch_mlir_does_not_know_is_named_after_its_call(cases: dict[str, Case]) -> None:
    for target in BACKENDS:
        [diag] = cases["UnknownToTorchMlir"].errors(target)
        assert diag.cause == "`torch.special.i0` (an alias of `aten.i0`)", diag.message
        assert diag.message.endswith("torch-mlir does not support it"), diag.message


def test_an_op_that_crashes_torch_mlir_alone_is_a_culprit_not_the_listings_end(
        cases: dict[str, Case]) -> None:
    """The first listing dies (SIGFPE); the second, with every run forked, pins it on the op."""
    for target in ("tosa", "stablehlo"):
        [diag] = cases["UnevenAdaptiveMaxPool"].errors(target)
        assert diag.cause is not None and diag.cause.startswith(
            "`F.adaptive_max_pool2d` (decomposed to "), diag.message
        assert "crashed" not in diag.message, diag.message


class CallsALibraryHelper(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return library_calls.many_rejected_calls(x)  # every op of the helper lands here


def test_many_calls_at_one_line_are_named_by_their_documented_names_and_counted() -> None:
    """A library helper's calls are named as torch documents them (`torch.special.erfinv`,
    not `torch.special_erfinv`; `F.interpolate`, not `torch.interpolate`), and a line with
    many causes names the first three, then how many more: `ops` keeps them all."""
    me = os.path.abspath(__file__)
    program = export_program(CallsALibraryHelper(), (torch.rand(1, 2, 4, 4),), {},
                             user_files={me})
    lowerer = ProgramLowerer(program, module_name="CallsALibraryHelper", user_files={me})
    [diag] = [d for d in lowerer.lower("tosa").diagnostics if d.severity == "error"]
    with open(me) as f:
        assert diag.line == next(n for n, text in enumerate(f, start=1)
                                 if "return library_calls.many_rejected_calls(x)" in text)
    assert diag.cause is not None
    assert diag.cause.startswith("`torch.special.erfinv` (an alias of `aten.erfinv`), "
                                 "`aten.fmod.Scalar`, "), diag.cause
    more = re.search(r"and (\d+) more calls$", diag.cause)
    assert more and int(more.group(1)) >= 2, diag.cause
    assert len(diag.ops or []) >= 3 + int(more.group(1)), diag.ops
    stablehlo = [d for d in lowerer.lower("stablehlo").diagnostics if d.severity == "error"]
    assert any("`F.interpolate` (decomposed to" in (d.cause or "") for d in stablehlo), stablehlo


@pytest.mark.parametrize(("name", "kind"), [("ReturnsWidth", "int"), ("ReturnsVerdict", "bool")])
def test_a_scalar_result_on_tosa_is_a_culprit_at_its_return(cases: dict[str, Case], name: str,
                                                           kind: str) -> None:
    [diag] = cases[name].errors("tosa")
    assert diag.op == "func.return"
    assert diag.message.startswith(f"the Python `{kind}` `forward` returns cannot be lowered "
                                   "to TOSA")
    summary = culprits.summary(cases[name].errors("tosa"), "tosa")
    assert f"(line {diag.line})" in summary and "func.func" not in summary


def test_a_verifier_error_is_traced_to_the_op_it_names(cases: dict[str, Case]) -> None:
    """StableHLO converts the slice into a `stablehlo.slice` its verifier rejects: the culprit is
    the slice, and the rest is shown lowered."""
    res = cases["SliceBeforeStart"].results["stablehlo"]
    [diag] = cases["SliceBeforeStart"].errors("stablehlo")
    assert diag.op == "torch.aten.slice.Tensor" and "'stablehlo.slice' op" in diag.message
    assert res.partial and "stablehlo.maximum" in res.ir  # the relu, lowered


def test_an_op_torch_mlir_itself_fails_on_is_the_culprit(cases: dict[str, Case]) -> None:
    """torch-mlir's pipeline rejects the module with a type mismatch at the function's return:
    the op at that location fails the same way alone, and is named."""
    for target in BACKENDS:
        [diag] = cases["EmptyTrilinear"].errors(target)
        assert diag.op == "torch.aten._trilinear"
        assert "torch-mlir fails on it alone (type of return operand 0" in diag.message


def test_a_size_check_made_by_torch_export_gets_the_line_that_uses_it(
        cases: dict[str, Case]) -> None:
    [diag] = cases["DynamicWidth"].errors("tosa")
    assert diag.line == line_of("return x * x.shape[1]")
    assert diag.ops and diag.ops[0] == "torch.aten.size.int"
    assert diag.cause and diag.cause.startswith("`aten.size.int`, ")


def test_no_reported_culprit_lowers_alone(cases: dict[str, Case]) -> None:
    """The check the broad-corpus figure runs on every culprit, here on each case; and on a
    made-up diagnostic naming the embedding's cat, which lowers alone."""
    checked = 0
    for case in cases.values():
        torch_module = case.lowerer.torch_module()
        if torch_module is None:  # torch-mlir's own pipeline failed: no backend ran
            continue
        for target in BACKENDS:
            checks = culprits_lowering_alone(torch_module, target,
                                                           case.errors(target), {CASES})
            assert not [c for c in checks if c.lowers_alone], checks
            checked += len(checks)
    assert checked >= 10
    cat_line = line_of("emb = torch.cat(")
    fake = LensDiagnostic(severity="error", message="", kind="unsupported-op", file=CASES,
                          line=cat_line, op="torch.aten.cat", ops=["torch.aten.cat"])
    [check] = culprits_lowering_alone(
        cases["TimestepAndUpsample"].lowerer.torch_module(), "tosa", [fake.to_json()], {CASES})
    assert check.lowers_alone and check.instances == 1 and check.line == cat_line


def test_culprit_precision_lowers_a_module_and_checks_its_culprits() -> None:
    """The one call a benchmark makes: export, lower to each backend, check each culprit."""
    ns = runpy.run_path(CASES)
    checks = culprit_precision(ns["AliasedCall"](), ns["INPUTS"]["AliasedCall"](),
                                            module_name="AliasedCall", user_files=[CASES])
    line = line_of("torch.special.erfinv(")
    assert {t: [(c.op, c.line, c.lowers_alone) for c in found] for t, found in checks.items()} \
        == {t: [("torch.aten.erfinv", line, False)] for t in BACKENDS}


def test_an_op_that_lowers_alone_is_reported_as_failing_in_its_context(
        cases: dict[str, Case]) -> None:
    """When a backend's error points at an op that lowers alone (nothing fails alone), it is
    no culprit: a `lowering-error` at its line says it fails only with the ops around it."""
    from torch_mlir_lens.worker.culprits import illegal_ops
    from torch_mlir_lens.worker.ir.locations import LocationResolver
    from torch_mlir_lens.worker.ir.mlir_diagnostics import Diag

    torch_module = cases["TimestepAndUpsample"].lowerer.torch_module()
    cat = next(op for op in illegal_ops.walk_ops(torch_module)
               if illegal_ops.op_name(op) == "torch.aten.cat")
    error = Diag("error", "failed to legalize operation 'torch.aten.cat'", str(cat.location))
    assert illegal_ops.find_at_errors(torch_module, "tosa", [error]) == []
    [found] = illegal_ops.find_at_errors(torch_module, "tosa", [error], in_context=True)
    assert found.lowers_alone and found.name == "torch.aten.cat"
    [diag] = illegal_ops.context_diagnostics([found], "tosa", LocationResolver({CASES}))
    assert diag.kind == "lowering-error" and diag.line == line_of("emb = torch.cat(")
    assert diag.message == ("TOSA left `aten.cat` unconverted in this module, although it "
                            "lowers alone: it fails only with the ops around it")


class HistcRouter(torch.nn.Module):
    """A mixture of experts' token count: `aten.histc`, which torch-mlir itself rejects, beside
    an op a backend rejects."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        counts = torch.histc(x, bins=4, min=0, max=3)
        scratch = torch.empty_strided((2, 3), (1, 2))
        return counts.sum() + x.sum() + scratch.sum() * 0


def test_culprits_are_checked_alone_past_an_op_torch_mlir_rejects() -> None:
    """With no module at the backend contract, the checks walk the one reached with the
    rejected op outlined, so the backend's own culprits are checked too."""
    here = os.path.abspath(__file__)
    checks = culprit_precision(HistcRouter(), (torch.rand(8) * 3,), module_name="HistcRouter",
                               user_files=[here])
    with open(here) as f:
        line = next(n for n, text in enumerate(f, start=1)
                    if "scratch = torch.empty_strided(" in text)
    assert {t: [(c.op, c.line, c.lowers_alone) for c in found] for t, found in checks.items()} \
        == {t: [("torch.aten.empty_strided", line, False)] for t in BACKENDS}


class NoGradHelper(torch.nn.Module):
    """A helper under `@torch.no_grad()` (as rotary embeddings are) with an autocast region
    inside: export wraps each region in a higher-order op, and the decompositions inline them
    with the wrapper's generated code as every op's stack trace and the wrapper as its call."""

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x + 1  # region: add
        with torch.autocast("cpu", enabled=False):
            return torch.special.erfinv(shifted)  # region: erfinv


class CallsNoGradHelper(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.helper = NoGradHelper()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.helper(x) * 2


def _this_line(mark: str) -> int:
    with open(os.path.abspath(__file__)) as f:
        return next(n for n, text in enumerate(f, start=1) if text.rstrip().endswith(mark))


def test_an_op_inside_no_grad_and_autocast_regions_keeps_its_call_and_line() -> None:
    here = os.path.abspath(__file__)
    program = export_program(CallsNoGradHelper(), (torch.rand(2, 4) * 0.5,), {},
                             user_files={here})
    lowerer = ProgramLowerer(program, module_name="CallsNoGradHelper", user_files={here})
    erfinv_line, add_line = _this_line("# region: erfinv"), _this_line("# region: add")
    for target in BACKENDS:
        result = lowerer.lower(target)
        (diag,) = result.diagnostics
        assert (diag.line, diag.cause) == (
            erfinv_line, "`torch.special.erfinv` (an alias of `aten.erfinv`)"), diag.message
    linalg = lowerer.lower("raw")
    lines = {m.line for m in linalg.map if m.depth == 0}
    assert {add_line, erfinv_line} <= lines, sorted(lines)


def test_a_constant_a_call_was_folded_into_is_a_culprit_when_it_fails_alone(
        cases: dict[str, Case]) -> None:
    """No op of the call is left, only the empty literal TOSA rejects: it is named, after the
    call it comes from. Linalg and StableHLO take the same literal."""
    [diag] = cases["FoldedToAnEmptyConstant"].errors("tosa")
    assert diag.ops == ["torch.vtensor.literal"], diag
    assert diag.cause == "`torch.ops.aten.tril_indices` (decomposed to `torch.vtensor.literal`)"


def test_a_while_loop_is_named_where_the_backend_has_no_loops(cases: dict[str, Case]) -> None:
    """The loop is the culprit (copied out with its body, it fails alone), not the constant
    StableHLO's last pass trips on, and not the loop's condition (its terminator)."""
    for target in ("tosa", "stablehlo"):
        [diag] = cases["CountsInAWhileLoop"].errors(target)
        assert diag.cause is not None and diag.cause.startswith("`while_loop` (imported as "), diag
        assert "torch.prim.Loop" in (diag.ops or []), diag
        named = (diag.ops or []) + [k["op"] for k in diag.knock_on or []]
        assert "torch.prim.Loop.condition" not in named, diag
        # Shown partially lowered, the loop a call; no declaration is left for the calls
        # made of its body's ops, which went with it.
        shown = cases["CountsInAWhileLoop"].results[target]
        declared = re.findall(r"func\.func private @([\w.]+)", shown.ir)
        assert shown.partial and "torch.prim.Loop" in declared, shown.ir
        assert all(f"call @{symbol}(" in shown.ir for symbol in declared), shown.ir
    assert cases["CountsInAWhileLoop"].results["linalg"].ok


def test_an_op_with_a_body_is_copied_out_with_what_its_body_takes_from_above(
        cases: dict[str, Case]) -> None:
    """The loop's body uses constants made before the loop: the copy makes its own, so the
    small module stands alone (it verifies) and lowers on Linalg, as the module does."""
    [loop] = ops_named(cases["CountsInAWhileLoop"].lowerer.torch_module(), "torch.prim.Loop")
    assert any(not isinstance(v.owner, ir.Block) and v.owner.operation.parent != loop.operation
               for inner in op_isolation.nested_ops(loop.operation) for v in inner.operands)
    small = op_isolation.isolate(loop)
    assert small.operation.verify()
    assert op_isolation.run_alone(small, "linalg") == op_isolation.LOWERS
    assert op_isolation.run_alone(small, "stablehlo") != op_isolation.LOWERS

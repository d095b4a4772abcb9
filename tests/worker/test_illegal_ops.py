"""Every op a backend cannot lower is listed at its line (examples/unsupported_ops.py)."""

from __future__ import annotations

import os
import runpy
import tempfile
from typing import Any

import pytest
import torch

from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.worker.lowering import LowerOptions, ProgramLowerer, export_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "unsupported_ops.py")
BACKENDS = ["linalg", "tosa", "stablehlo"]
INPUTS: dict[str, tuple[Any, ...]] = {
    "QuantileHead": (torch.rand(4, 16),),
    "ShiftedFeatures": (torch.randn(4, 16),),
    "RobustUpsampler": (torch.randn(1, 3, 8, 8),),
    "LogGammaPrior": (torch.rand(4, 16) + 0.5,),
}


def line_of(text: str) -> int:
    with open(EXAMPLE) as f:
        for i, line in enumerate(f, start=1):
            if text in line and not line.lstrip().startswith(("#", '"')):
                return i
    raise AssertionError(text)


# (module, target) → {(op, source text of its line)}; None means the target lowers fine.
ERFINV, FMOD = "z = torch.erfinv(", "wrapped = torch.fmod("
ROLL, ATAN2, SCATTER = "shifted = torch.roll(", "angle = torch.atan2(", "acc = angle.scatter_add("
NEAREST, KTH, DIAG = "F.interpolate(y", "scale = torch.kthvalue(", "torch.diag(gram)"
LGAMMA, HYPOT = "prior = torch.lgamma(", "magnitude = torch.hypot("
EXPECTED: dict[tuple[str, str], set[tuple[str, str]] | None] = {
    ("QuantileHead", "linalg"): {("torch.aten.erfinv", ERFINV), ("torch.aten.fmod.Scalar", FMOD)},
    ("QuantileHead", "tosa"): {("torch.aten.erfinv", ERFINV), ("torch.aten.fmod.Scalar", FMOD)},
    ("QuantileHead", "stablehlo"): {("torch.aten.erfinv", ERFINV),
                                    ("torch.aten.fmod.Scalar", FMOD)},
    ("ShiftedFeatures", "linalg"): None,
    # roll is decomposed into slice + cat before TOSA sees it.
    ("ShiftedFeatures", "tosa"): {("torch.aten.slice.Tensor", ROLL),
                                  ("torch.aten.atan2", ATAN2),
                                  ("torch.aten.scatter_add", SCATTER)},
    ("ShiftedFeatures", "stablehlo"): None,
    ("RobustUpsampler", "linalg"): None,
    ("RobustUpsampler", "tosa"): {("torch.aten.__interpolate.size_list_scale_list", NEAREST),
                                  ("torch.aten.kthvalue", KTH)},
    ("RobustUpsampler", "stablehlo"): {
        ("torch.aten.__interpolate.size_list_scale_list", NEAREST),
        ("torch.aten.kthvalue", KTH), ("torch.aten.diagonal", DIAG)},
    ("LogGammaPrior", "linalg"): {("torch.aten.lgamma", LGAMMA), ("torch.aten.hypot", HYPOT)},
    ("LogGammaPrior", "tosa"): {("torch.aten.lgamma", LGAMMA), ("torch.aten.hypot", HYPOT)},
    ("LogGammaPrior", "stablehlo"): {("torch.aten.lgamma", LGAMMA),
                                     ("torch.aten.hypot", HYPOT)},
}


@pytest.fixture(scope="module")
def lowerers() -> dict[str, ProgramLowerer]:
    ns = runpy.run_path(EXAMPLE)
    out = {}
    for name, args in INPUTS.items():
        program = export_program(ns[name](), args, {}, user_files={EXAMPLE})
        out[name] = ProgramLowerer(program, module_name=name, user_files={EXAMPLE})
    return out


@pytest.fixture(scope="module")
def results(lowerers: dict[str, ProgramLowerer]) -> dict[tuple[str, str], LowerResult]:
    return {(name, t): lowerer.lower(t) for name, lowerer in lowerers.items() for t in BACKENDS}


@pytest.mark.parametrize(("module", "target"), sorted(EXPECTED))
def test_all_unsupported_ops_at_their_lines(results: dict, module: str, target: str) -> None:
    res = results[(module, target)]
    expected = EXPECTED[(module, target)]
    if expected is None:
        assert res.ok, res.diagnostics
        assert not res.diagnostics
        return
    assert not res.ok
    errors = [d for d in res.diagnostics if d.severity == "error"]
    got = {(op, d.line) for d in errors for op in (d.ops or [d.op])}
    want = {(op, line_of(src)) for op, src in expected}
    assert got == want
    lines = [d.line for d in errors]
    assert len(lines) == len(set(lines)), "one diagnostic per line and backend"
    for d in errors:
        assert d.kind == "unsupported-op"
        assert d.file == EXAMPLE and d.target == target
        assert d.op and d.ops and d.op == d.ops[0]
        assert d.cause and d.message.startswith(d.cause)
        assert d.message.count("cannot be lowered") == 1  # each thing said once
    # The rest of the module is still shown lowered (or the torch IR where it cannot be).
    assert res.ir and res.map


def test_decomposed_op_is_named_after_its_python_call(results: dict) -> None:
    """torch.roll reaches TOSA as slice + cat: one diagnostic, naming `torch.roll` first."""
    res = results[("ShiftedFeatures", "tosa")]
    roll = [d for d in res.diagnostics if d.line == line_of(ROLL)]
    assert len(roll) == 1
    assert roll[0].message.startswith(
        "`torch.roll` (decomposed to `aten.slice.Tensor`) cannot be lowered to TOSA")


def test_partial_ir_lowers_the_rest_and_marks_the_rejected_ops(results: dict) -> None:
    """TOSA rejects roll, atan2 and scatter_add: everything else is TOSA, they are calls."""
    res = results[("ShiftedFeatures", "tosa")]
    assert res.partial and not res.ok
    assert "torch.aten." not in res.ir.split("module", 1)[1].replace("@torch.aten.", "")
    assert "tosa." in res.ir
    for name in ("torch.aten.atan2", "torch.aten.scatter_add", "torch.aten.slice.Tensor"):
        calls = [i for i, text in enumerate(res.ir.splitlines(), 1)
                 if f"call @{name}" in text]
        assert calls, name
        assert all("not lowered" in res.ir.splitlines()[i - 1] for i in calls)
    assert res.ir.startswith("// Partial TOSA lowering: 3 lines")
    mapped = {m.line for m in res.map}
    assert {line_of(ROLL), line_of(ATAN2), line_of(SCATTER)} <= mapped


def test_first_error_only_when_listing_is_off(lowerers: dict[str, ProgramLowerer]) -> None:
    res = lowerers["ShiftedFeatures"].lower("tosa", options=LowerOptions(list_unsupported=False))
    assert not res.ok
    assert len(res.diagnostics) == 1
    assert res.diagnostics[0].line == line_of(ROLL)


def test_failing_lowering_is_silent_and_leaves_no_files(
        lowerers: dict[str, ProgramLowerer], capfd: pytest.CaptureFixture[str]) -> None:
    """No MLIR text on fd 2, no repro file with weights in $TMPDIR."""
    tmp = tempfile.gettempdir()
    before = set(os.listdir(tmp))
    lowerer = lowerers["QuantileHead"]
    for target in BACKENDS:
        assert not lowerer.lower(target).ok
    assert not lowerer.lower("tosa", options=LowerOptions(print_after_all=True)).ok
    after = set(os.listdir(tmp))
    ours = {n for n in after - before if n.endswith(".mlir") or "torch-mlir-lens" in n}
    assert not ours
    out, err = capfd.readouterr()
    assert "failed to legalize" not in err + out
    assert "error:" not in err


def test_failure_with_no_op_still_comes_back_on_the_module(tmp_path: Any) -> None:
    """A pipeline error that names no op is still reported (here: a verifier error)."""
    path = tmp_path / "complex_abs.py"
    path.write_text(
        "import torch\n"
        "class Spectrum(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.fft.rfft(x).abs()\n"
    )
    ns = runpy.run_path(str(path))
    program = export_program(ns["Spectrum"](), (torch.randn(4, 16),), {},
                             user_files={str(path)})
    res = ProgramLowerer(program, module_name="Spectrum", user_files={str(path)}).lower("linalg")
    assert not res.ok
    assert res.diagnostics
    assert all(d.severity == "error" and d.target == "linalg" for d in res.diagnostics)
    assert {d.kind for d in res.diagnostics} <= {"lowering-error", "unsupported-op"}
    assert all(d.line in (None, 4) for d in res.diagnostics)


@pytest.mark.parametrize("module_line", [None, 12])
def test_unlocated_failure_lands_on_the_module(module_line: int | None) -> None:
    """A custom pipeline failing with an error that has no location: reported on the module."""
    models = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "small_models.py")
    ns = runpy.run_path(models)
    program = export_program(ns["MLP"](), (torch.randn(2, 16),), {}, user_files={models})
    lowerer = ProgramLowerer(program, module_name="MLP", user_files={models},
                             module_file=models if module_line else None,
                             module_line=module_line)
    verify = "builtin.module(torch-verify-linalg-on-tensors-backend-contract)"
    res = lowerer.lower(None, pipeline=verify)
    assert not res.ok and res.target == "custom"
    contract = [d for d in res.diagnostics if "backend contract" in d.message]
    assert contract and contract[0].kind == "lowering-error"
    assert contract[0].line == module_line
    assert contract[0].file == (models if module_line else None)


def test_pass_picker_of_a_partial_lowering(lowerers: dict[str, ProgramLowerer]) -> None:
    """The passes shown for a partial lowering: the outlined Torch IR, then each pass of the
    backend pipeline on it (the module, not each declared function alone)."""
    res = lowerers["ShiftedFeatures"].lower("tosa", options=LowerOptions(print_after_all=True))
    assert res.partial and res.passes
    assert res.passes[0].name == "outline-rejected-ops"
    assert "call @torch.aten.atan2" in res.passes[0].ir
    assert any(p.name == "convert-torch-to-tosa" for p in res.passes)
    assert all("@main" in p.ir for p in res.passes)
    assert "tosa." in res.passes[-1].ir
    assert "torch.aten." not in res.passes[-1].ir.replace("@torch.aten.", "")


def test_ops_torch_mlir_rejects_are_outlined_too(results: dict) -> None:
    """lgamma and hypot fail before any backend (`torch.operator`): every backend still shows
    the rest lowered, the two ops as calls at their lines."""
    for target in BACKENDS:
        res = results[("LogGammaPrior", target)]
        assert res.partial and not res.ok
        assert "call @torch.aten.lgamma" in res.ir and "call @torch.aten.hypot" in res.ir
        assert "torch.operator" not in res.ir
        lines = sorted(d.line for d in res.diagnostics)
        assert lines == [line_of(LGAMMA), line_of(HYPOT)]
    assert "linalg.generic" in results[("LogGammaPrior", "linalg")].ir  # the sum, lowered

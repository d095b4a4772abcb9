"""Stretch of Verify: on a mismatch, the first source line whose values differ."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.protocol.verify_results import Divergence
from torch_mlir_lens.worker import lowering
from torch_mlir_lens.worker.verify.divergence import first_divergence
from torch_mlir_lens.worker.verify.job import verify_lowerer

MODELS_PATH = Path(__file__).parent / "models" / "verify_models.py"
USER_FILES = [str(MODELS_PATH)]


def _load_models() -> ModuleType:
    name = "lens_verify_models"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, MODELS_PATH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


vm = _load_models()


def _line_of(needle: str) -> int:
    lines = MODELS_PATH.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def _alter(ir: str) -> str:
    assert ir.count("arith.constant 3.000000e+00") == 1
    return ir.replace("arith.constant 3.000000e+00", "arith.constant 3.100000e+00")


@pytest.fixture
def nested() -> tuple[torch.nn.Module, torch.Tensor, lowering.ProgramLowerer]:
    torch.manual_seed(0)
    model = vm.NestedScale().eval()
    x = torch.randn(4, 6)
    program = lowering.export_program(model, (x,), {}, user_files=USER_FILES)
    lowerer = lowering.ProgramLowerer(program, module_name="NestedScale", user_files=USER_FILES)
    return model, x, lowerer


def test_mismatch_points_at_the_altered_line(nested) -> None:
    model, x, lowerer = nested
    result = verify_lowerer(lowerer, model, (x,), {}, mutate_ir=_alter)
    assert not result.ok and result.kind == ErrorKind.VERIFY_MISMATCH
    line = _line_of("h = h * 3.0")
    assert result.divergence is not None
    assert (Path(result.divergence.file).name, result.divergence.line) == (
        "verify_models.py", line,
    )
    first = result.diagnostics[0]
    assert (first.line, first.kind) == (line, ErrorKind.VERIFY_MISMATCH)
    assert result.message.endswith(f"first differs at line {line}")
    assert "locate" in result.timings


def test_no_divergence_when_everything_matches(nested) -> None:
    model, x, lowerer = nested
    result = verify_lowerer(lowerer, model, (x,), {})
    assert result.ok and result.divergence is None
    linalg = lowerer.module_for("linalg")
    assert first_divergence(linalg, lowerer.program, (x,), {}, user_files=USER_FILES) is None


def test_an_infinite_error_stays_json() -> None:
    """A compiled line that overflows where eager does not: the reply must still parse."""
    div = Divergence(file="m.py", line=3, shape=[2], dtype="float32", max_abs_err=math.inf,
                     worst_index=[1], message="differs")
    text = json.dumps(div.to_json(), allow_nan=False)  # raises on a bare Infinity
    assert json.loads(text)["max_abs_err"] == "inf"

"""Verify at several sizes of a module's dynamic dims (worker/verify/sizes.py, linalg.py):
which sizes, inputs of those sizes, one compilation run at each, each reported."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.protocol.verify_results import DimSize, VerifyResult
from torch_mlir_lens.worker import lowering
from torch_mlir_lens.worker.verify import sizes
from torch_mlir_lens.worker.verify.linalg import SizeInputs, verify_linalg_module

MODELS = Path(__file__).parent / "models" / "dynamic_views.py"
USERS = [str(MODELS)]


def _models() -> ModuleType:
    name = "lens_dynamic_views"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, MODELS)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _dim(name: str, example: int, low: int = 2, high: int | None = None) -> sizes.DynamicDim:
    return sizes.DynamicDim(name, name, example, low, high)


def _values(points: list[sizes.Point]) -> list[tuple[int, ...]]:
    return [tuple(d.size for d in p) for p in points]


def test_sizes_per_dim_the_examples_a_small_one_a_prime_and_the_bound() -> None:
    assert _values(sizes.size_points([_dim("batch", 2), _dim("seq", 8)])) == [
        (2, 8), (3, 2), (5, 7)]
    # A bound adds its maximum (the other dims at the example's); values stay in range.
    assert _values(sizes.size_points([_dim("batch", 2), _dim("seq", 8, high=64)])) == [
        (2, 8), (3, 2), (5, 7), (2, 64)]
    assert _values(sizes.size_points([_dim("seq", 5, low=4, high=6)])) == [(5,), (4,), (6,)]
    # A bound far beyond the example (a big model's 4096 positions) is not run.
    assert len(sizes.size_points([_dim("batch", 2), _dim("seq", 8, high=4096)])) == 3
    assert sizes.size_points([]) == []


def test_inputs_of_another_size_are_made_of_the_examples_values() -> None:
    model = _models().TwoDynamicDimsLinear().eval()
    x = torch.randn(2, 5, 32)
    spec = {"x": {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}}
    program = lowering.export_program(model, (x,), {}, user_files=USERS, dynamic_shapes=spec)
    dims = sizes.dynamic_dims(program, model, (x,), {}, spec)
    assert [(d.name, d.example, d.low, d.high) for d in dims] == [
        ("batch", 2, 2, None), ("seq", 5, 2, None)]
    (args, kwargs) = sizes.inputs_at(program, (x,), {}, dims,
                                     (DimSize("batch", 3), DimSize("seq", 7)))
    assert args[0].shape == (3, 7, 32) and kwargs == {}
    assert set(args[0].reshape(-1).tolist()) <= set(x.reshape(-1).tolist())
    # Without a spec the dims are named after their input.
    unnamed = sizes.dynamic_dims(program, model, (x,), {}, None)
    assert [d.name for d in unnamed] == ["x.shape[0]", "x.shape[1]"]


@pytest.fixture(scope="module")
def compiled() -> tuple[lowering.ProgramLowerer, torch.nn.Module, list[SizeInputs]]:
    torch.manual_seed(0)
    model = _models().TwoDynamicDimsLinear().eval()
    x = torch.randn(2, 5, 32)
    spec = {"x": {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}}
    program = lowering.export_program(model, (x,), {}, user_files=USERS, dynamic_shapes=spec)
    lowerer = lowering.ProgramLowerer(program, module_name="M", user_files=USERS)
    dims = sizes.dynamic_dims(program, model, (x,), {}, spec)
    runs = [SizeInputs(list(p), *sizes.inputs_at(program, (x,), {}, dims, p))
            for p in sizes.size_points(dims)]
    return lowerer, model, runs


def test_the_llvm_target_of_dynamic_linalg_is_all_llvm(compiled) -> None:
    """Dynamic Linalg carries tensor.dim, dynamic tensor.empty and, once memrefs are expanded,
    affine.apply: all of it reaches the LLVM dialect."""
    lowerer, _model, _runs = compiled
    linalg = str(lowerer.module_for("linalg"))
    assert "tensor.dim" in linalg and "tensor.empty(%" in linalg
    result = lowerer.lower("llvm")
    assert result.ok, [d.message for d in result.diagnostics]
    assert "llvm.func @main" in result.ir and "affine." not in result.ir


def test_each_size_is_reported_and_the_first_that_differs_speaks(compiled) -> None:
    lowerer, model, runs = compiled
    linalg = lowerer.module_for("linalg")

    def reference(x: torch.Tensor) -> torch.Tensor:
        """Eager as the compiled module, except when seq is not the example's."""
        out = model(x)
        return out if x.shape[1] == 5 else out + 1.0

    result = verify_linalg_module(linalg, reference, runs[0].args, module_name="M", sizes=runs)
    assert not result.ok and result.kind == ErrorKind.VERIFY_MISMATCH
    assert [c.ok for c in result.sizes] == [True, False, False]
    assert result.sizes[0].example and not result.sizes[1].example
    assert result.message.startswith("✗ differs at batch=3, seq=2: output 0, max err 1")
    assert result.message.endswith("(and at 1 more sizes)")
    assert result.outputs == result.sizes[0].outputs and result.outputs[0].ok
    assert [d.message.split(":")[0] for d in result.diagnostics] == [
        "compiled result differs from eager at batch=3, seq=2",
        "compiled result differs from eager at batch=5, seq=7"]
    assert result.timings["jit"] > 0  # compiled once, run three times
    again = VerifyResult.from_json(json.loads(json.dumps(result.to_json(), allow_nan=False)))
    assert again.sizes == result.sizes


def test_an_eager_failure_at_one_size_is_that_sizes_error(compiled) -> None:
    lowerer, model, runs = compiled
    linalg = lowerer.module_for("linalg")

    def reference(x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] == 5:
            raise RuntimeError("batch 5 is not supported")
        return model(x)

    result = verify_linalg_module(linalg, reference, runs[0].args, module_name="M", sizes=runs)
    assert not result.ok and result.kind == ErrorKind.VERIFY_ERROR
    assert [c.ok for c in result.sizes] == [True, True, False]
    assert result.message.startswith("✗ at batch=5, seq=7: eager run failed")
    assert "batch 5 is not supported" in result.diagnostics[0].message

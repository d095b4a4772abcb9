"""The `llvm` target and Verify: JIT the lowered IR and compare it with eager PyTorch."""

from __future__ import annotations

import gc
import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import psutil
import pytest
import torch

from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.rules.targets import LLVM_PIPELINE_HEAD
from torch_mlir_lens.worker import lowering
from torch_mlir_lens.worker.stages.llvm import leftover_ops, lower_linalg_to_llvm
from torch_mlir_lens.worker.verify import (
    VerifyResult,
    compare_output,
    default_tolerances,
    verify_linalg_module,
)
from torch_mlir_lens.worker.verify.job import verify_callable
from torch_mlir_lens.worker.verify.link_errors import missing_symbols, why_missing

MODELS_PATH = Path(__file__).parent / "models" / "verify_models.py"


def _load_models() -> ModuleType:
    # Loaded under its real path (frames name it) and a unique name (no clash with other
    # test folders' `models` packages).
    spec = importlib.util.spec_from_file_location("lens_verify_models", MODELS_PATH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


vm = _load_models()
USER_FILES = [str(MODELS_PATH)]


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def _verify(model: torch.nn.Module, *args: object, **kwargs: object) -> VerifyResult:
    """The worker's verify of one module instance: export, linalg, JIT, compare."""
    return verify_callable(
        model.eval(), args, kwargs, module_name=type(model).__name__, user_files=USER_FILES
    )


def export_linalg(model: torch.nn.Module, args: tuple[object, ...]) -> Any:
    """The linalg-on-tensors module of `model`, by the worker's own export and lowering."""
    program = lowering.export_program(model, args, user_files=USER_FILES)
    lowerer = lowering.ProgramLowerer(program, module_name=type(model).__name__,
                                      user_files=USER_FILES)
    return lowerer.module_for("linalg")


# --- known-good examples ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "shape", "n_outputs"),
    [
        (vm.MLP, (4, 16), 1),
        (vm.PaddedCNN, (2, 3, 12, 12), 1),
        (vm.AttentionBlock, (2, 6, 16), 2),
    ],
    ids=["mlp", "cnn-padding", "attention-two-outputs"],
)
def test_known_good_models_match_eager(factory, shape, n_outputs) -> None:
    result = _verify(factory(), torch.randn(*shape))
    assert result.ok, result.message
    assert result.kind is None
    assert len(result.outputs) == n_outputs
    assert all(o.ok and o.dtype == "float32" for o in result.outputs)
    assert result.max_abs_err < 1e-5
    assert result.message.startswith("✓ matches eager (max err ")
    assert {"export", "lower_llvm", "jit", "run", "eager", "compare", "total"} <= set(
        result.timings
    )


def test_padding_goes_through_the_memref_copy_path() -> None:
    model = vm.PaddedCNN().eval()
    x = torch.randn(1, 3, 8, 8)
    linalg = export_linalg(model, (x,))
    assert "tensor.pad" in str(linalg)  # lowers to memref.copy → needs refback-munge-memref-copy
    assert "refback-munge-memref-copy" in LLVM_PIPELINE_HEAD
    result = verify_linalg_module(linalg, model, (x,), module_name="PaddedCNN")
    assert result.ok, result.message


def test_lowered_module_is_all_llvm_with_c_interface() -> None:
    linalg = export_linalg(vm.MLP().eval(), (torch.randn(2, 16),))
    lower_linalg_to_llvm(linalg)
    assert leftover_ops(linalg) == []
    assert "llvm.func @_mlir_ciface_main" in str(linalg)


# --- dtypes and shapes ------------------------------------------------------------------------


def test_int64_output() -> None:
    result = _verify(vm.ArgmaxInt(), torch.randn(3, 5))
    assert result.ok, result.message
    (out,) = result.outputs
    assert (out.dtype, out.shape, out.rtol, out.atol) == ("int64", [3], 0.0, 0.0)


def test_int32_in_and_out() -> None:
    result = _verify(vm.IntArith(), torch.randint(-5, 5, (4, 3), dtype=torch.int32))
    assert result.ok, result.message
    assert result.outputs[0].dtype == "int32"


def test_bool_output() -> None:
    result = _verify(vm.PositiveMask(), torch.randn(6, 4))
    assert result.ok, result.message
    assert result.outputs[0].dtype == "bool"


def test_zero_d_outputs_from_a_dict_and_a_kwarg() -> None:
    result = _verify(vm.ScalarLoss(), torch.randn(3, 4), y=torch.randn(3, 4))
    assert result.ok, result.message
    assert [(o.shape, o.dtype, o.worst_index) for o in result.outputs] == [
        ([], "float32", []),
        ([], "int64", []),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["f32", "f16", "bf16"])
def test_zero_d_input_and_16_bit_floats(dtype: torch.dtype) -> None:
    # 16-bit floats cross the C interface as raw 16-bit integers and are viewed back.
    x, s = torch.randn(4, 3, dtype=dtype), torch.tensor(2.5, dtype=dtype)
    result = _verify(vm.ScaleByScalar(), x, s)
    assert result.ok, result.message
    name = str(dtype).removeprefix("torch.")
    assert [(o.shape, o.dtype) for o in result.outputs] == [([4, 3], name), ([], name)]


def test_non_contiguous_inputs() -> None:
    transposed = torch.randn(16, 4).t()  # strides (1, 4)
    sliced = torch.randn(6, 20)[1:5, 2:18]  # storage offset and row stride 20
    assert not transposed.is_contiguous() and not sliced.is_contiguous()
    for x in (transposed, sliced):
        result = _verify(vm.MLP(), x)
        assert result.ok, result.message


# --- an altered lowering ---------------------------------------------------------------------


def test_altered_constant_is_reported_at_the_right_output_and_index() -> None:
    model = vm.ScaleHeads().eval()
    x = torch.randn(4, 8)
    text = str(export_linalg(model, (x,)))
    assert text.count("3.000000e+00") == 1  # the `* 3.0` of output 1, nothing else

    result = verify_linalg_module(
        text, model, (x,), module_name="ScaleHeads",
        mutate_ir=lambda ir: ir.replace("3.000000e+00", "3.500000e+00"),
    )

    assert not result.ok
    assert result.kind == ErrorKind.VERIFY_MISMATCH
    assert result.outputs[0].ok
    bad = result.outputs[1]
    assert not bad.ok
    # error 0.5·|x| against tolerance atol + rtol·3|x|: worst where |x| is largest
    expected_index = [int(i) for i in np.unravel_index(int(x.abs().argmax()), x.shape)]
    assert bad.worst_index == expected_index
    assert bad.max_abs_err == pytest.approx(0.5 * float(x.abs().max()), rel=1e-5)
    assert result.message.startswith("✗ differs: output 1, max err ")
    assert result.message.endswith(f"at {expected_index}")
    assert result.diagnostics and result.diagnostics[0].kind == ErrorKind.VERIFY_MISMATCH


def test_unaltered_text_round_trip_still_matches() -> None:
    model = vm.ScaleHeads().eval()
    x = torch.randn(4, 8)
    text = str(export_linalg(model, (x,)))
    result = verify_linalg_module(text, model, (x,), module_name="ScaleHeads")
    assert result.ok, result.message


# --- failures come back as results ------------------------------------------------------------


def _line_of(needle: str) -> int:
    lines = MODELS_PATH.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_failing_linalg_lowering_gives_its_diagnostics() -> None:
    result = _verify(vm.Unlowerable(), torch.randn(4, 8))
    assert not result.ok
    # The same words as `lower` and `check`: the op that cannot be lowered, at its line.
    assert result.kind == ErrorKind.UNSUPPORTED_OP
    assert result.outputs == []
    diag = result.diagnostics[0]
    assert "complex" in diag.message
    assert diag.file is not None and Path(diag.file).name == "verify_models.py"
    line = _line_of("torch.fft.rfft(x).abs()")
    assert diag.line == line
    assert result.message == f"✗ cannot lower to Linalg: `aten.abs` (line {line})"


SOFTMAX_IR = """
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tensor.empty() : tensor<4xf32>
  %1 = linalg.softmax dimension(0) ins(%arg0 : tensor<4xf32>) outs(%0 : tensor<4xf32>)
    -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


def test_op_left_unlowered_names_the_op() -> None:
    result = verify_linalg_module(
        SOFTMAX_IR, lambda x: x.softmax(0), (torch.randn(4),), module_name="Softmax"
    )
    assert not result.ok
    # Verify's own LLVM step failed: no verdict on the module (the CLI exits 3)
    assert result.kind == ErrorKind.VERIFY_ERROR
    assert result.message.startswith("✗ Verify could not run it: lowering to LLVM failed")
    assert "'linalg.softmax' was not lowered" in result.diagnostics[0].message


MISSING_SYMBOL_IR = """
func.func private @nowhere(f32) -> f32
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tensor.empty() : tensor<4xf32>
  %1 = linalg.map ins(%arg0 : tensor<4xf32>) outs(%0 : tensor<4xf32>) (%a: f32, %o: f32) {
    %b = func.call @nowhere(%a) : (f32) -> f32
    linalg.yield %b : f32
  }
  return %1 : tensor<4xf32>
}
"""


def test_unresolved_symbol_is_a_verify_error_that_names_it() -> None:
    """The symbol LLVM did not find, and why the module needed it; not the module's declared
    externals (`malloc` is one: it was found)."""
    result = verify_linalg_module(
        MISSING_SYMBOL_IR, lambda x: x, (torch.randn(4),), module_name="Ext"
    )
    assert not result.ok
    assert result.kind == ErrorKind.VERIFY_ERROR
    assert result.message == (
        "✗ JIT could not link main: symbol not found: `nowhere` (the module calls it but does "
        "not define it, nor does this process)"
    )


def test_llvm_missing_symbols_and_why_each_was_needed() -> None:
    text = ("JIT session error: Symbols not found: [ __truncsfbf2, __extendhfsf2 ]\n"
            "JIT session error: Symbols not found: [ __truncsfbf2 ]\n")
    assert missing_symbols(text) == ["__truncsfbf2", "__extendhfsf2"]
    assert missing_symbols("JIT session error: Unknown error\n") == []
    assert why_missing("__truncsfbf2") == (
        "`__truncsfbf2` (a bf16 conversion this CPU has no instruction for)")
    assert why_missing("__extendbfsf2").startswith("`__extendbfsf2` (a bf16 conversion")
    for f16 in ("__extendhfsf2", "__truncdfhf2", "__gnu_h2f_ieee", "__gnu_f2h_ieee"):
        assert f"`{f16}` (an f16 conversion" in why_missing(f16)
    assert why_missing("nowhere", declared=["nowhere", "malloc"]) == (
        "`nowhere` (the module calls it but does not define it, nor does this process)")
    assert why_missing("nowhere") == (
        "`nowhere` (neither in the compiled module nor in this process)")


def test_wrong_number_of_inputs_is_a_verify_error() -> None:
    model = vm.MLP().eval()
    linalg = export_linalg(model, (torch.randn(2, 16),))
    result = verify_linalg_module(
        linalg, model, (torch.randn(2, 16), torch.randn(2)), module_name="MLP"
    )
    assert result.kind == ErrorKind.VERIFY_ERROR
    assert "takes 1 tensors" in result.message


# --- comparison rules -------------------------------------------------------------------------


def test_default_tolerances() -> None:
    assert default_tolerances(torch.float32) == (1e-5, 1e-4)
    r16, a16 = default_tolerances(torch.float16)
    rbf, abf = default_tolerances(torch.bfloat16)
    assert 1e-5 < r16 < rbf and a16 <= abf
    for dtype in (torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool):
        assert default_tolerances(dtype) == (0.0, 0.0)


def test_compare_nan_inf_shape_dtype_and_overrides() -> None:
    nan, inf = math.nan, math.inf
    same = torch.tensor([1.0, nan, inf, -inf])
    assert compare_output(0, same.clone(), same).ok
    one_nan = compare_output(0, torch.tensor([1.0, 2.0]), torch.tensor([1.0, nan]))
    assert not one_nan.ok and one_nan.worst_index == [1]
    shape = compare_output(2, torch.zeros(2, 3), torch.zeros(3, 2))
    assert not shape.ok and "shape [2, 3], eager [3, 2]" in shape.message
    dtype = compare_output(0, torch.zeros(2), torch.zeros(2, dtype=torch.float64))
    assert not dtype.ok and "dtype" in dtype.message
    close = (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.001]))
    assert not compare_output(0, *close).ok
    assert compare_output(0, *close, rtol=1e-3, atol=0.0).ok
    ints = (torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert not compare_output(0, *ints, rtol=1.0, atol=1.0).ok  # ints stay exact
    assert compare_output(0, torch.zeros(0, 3), torch.zeros(0, 3)).ok


def test_result_json_round_trip() -> None:
    model = vm.ScaleHeads().eval()
    x = torch.randn(2, 8)
    result = verify_linalg_module(
        str(export_linalg(model, (x,))), model, (x,), module_name="ScaleHeads",
        mutate_ir=lambda ir: ir.replace("3.000000e+00", "-3.000000e+00"),
    )
    data = result.to_json()
    again = VerifyResult.from_json(data)
    assert again.to_json() == data
    assert again.outputs[1].worst_index == result.outputs[1].worst_index
    inf_result = compare_output(0, torch.zeros(2), torch.zeros(3))
    assert inf_result.to_json()["max_abs_err"] == "inf"


# --- memory -----------------------------------------------------------------------------------


def test_repeated_verification_does_not_grow_memory() -> None:
    model = vm.BigOutputs().eval()
    x = torch.randn(256, 256)  # two 256 KiB results per run: 50 MiB over 100 runs if leaked
    linalg = export_linalg(model, (x,))
    proc = psutil.Process()

    def rss_mib() -> float:
        gc.collect()
        return proc.memory_info().rss / 2**20

    for _ in range(5):  # warm up: JIT, allocator arenas
        verify_linalg_module(linalg, model, (x,), module_name="BigOutputs")
    before = rss_mib()
    for _ in range(100):
        result = verify_linalg_module(linalg, model, (x,), module_name="BigOutputs")
        assert result.ok
    growth = rss_mib() - before
    assert growth < 10, f"RSS grew {growth:.1f} MiB over 100 verifications"

"""Why a backend refuses an op (rules/refusals.py): one test per reason, on the facts the
worker reads from the op; tests/worker/test_refusal_reasons.py sees them in real lowerings."""

from __future__ import annotations

import pytest

from torch_mlir_lens.rules.refusals import OpFacts, explains, reason, tensor_type


def facts(name: str, operands: list[str], results: list[str],
          constants: list[str | None] | None = None) -> OpFacts:
    return OpFacts(name, tuple(operands), tuple(results),
                   tuple(constants or [None] * len(operands)))


def test_types_are_read_as_the_backends_print_them() -> None:
    t = tensor_type("!torch.vtensor<[1,4,16,0],f32>")
    assert t is not None and t.sizes == (1, 4, 16, 0) and t.builtin == "tensor<1x4x16x0xf32>"
    dynamic = tensor_type("!torch.vtensor<[?,8],f64>")
    assert dynamic is not None and dynamic.builtin == "tensor<?x8xf64>"
    assert tensor_type("!torch.int") is None


@pytest.mark.parametrize(("op", "backend", "words"), [
    (facts("aten.slice.Tensor", ["!torch.vtensor<[2,8],f32>", "!torch.int"],
           ["!torch.vtensor<[2,0],f32>"]), "tosa",
     "TOSA has no zero-sized tensors, and its result is `tensor<2x0xf32>`"),
    (facts("aten.sum.dim_IntList", ["!torch.vtensor<[2,0],f32>"], ["!torch.vtensor<[2],f32>"]),
     "tosa", "TOSA has no zero-sized tensors, and its operand is `tensor<2x0xf32>`"),
    (facts("aten.view", ["!torch.vtensor<[?,8],f32>"], ["!torch.vtensor<[?,2,4],f32>"]), "tosa",
     "its result `tensor<?x2x4xf32>` has a dynamic size, which TOSA's conversion of it does "
     "not take"),
    (facts("aten.cumsum", ["!torch.vtensor<[4],f64>"], ["!torch.vtensor<[4],f64>"]), "tosa",
     "TOSA has no 64-bit floats, and its result is `tensor<4xf64>`"),
    (facts("aten.mul.Tensor", ["!torch.vtensor<[4],complex<f32>>"],
           ["!torch.vtensor<[4],complex<f32>>"]), "tosa",
     "TOSA has no complex numbers, and its result is `tensor<4xcomplex<f32>>`"),
    (facts("aten.convolution", ["!torch.vtensor<[1,4,8,8],f32>"] + ["!torch.int"] * 8,
           ["!torch.vtensor<[1,4,6,6],f32>"], [None] * 8 + ["2"]), "linalg",
     "a grouped convolution (groups=2), which its conversion does not take"),
    (facts("aten._upsample_bilinear2d_aa", ["!torch.vtensor<[1,2,8,8],f32>"],
           ["!torch.vtensor<[1,2,4,4],f32>"]), "stablehlo",
     "`antialias=True`: torch-mlir has no antialiased resampling"),
])
def test_each_reason(op: OpFacts, backend: str, words: str) -> None:
    assert reason(op, backend) == words


def test_no_reason_is_made_up() -> None:
    erfinv = facts("aten.erfinv", ["!torch.vtensor<[4],f32>"], ["!torch.vtensor<[4],f32>"])
    assert reason(erfinv, "tosa") is None
    empty = facts("aten.slice.Tensor", ["!torch.vtensor<[2,8],f32>"], ["!torch.vtensor<[2,0],f32>"])
    assert reason(empty, "linalg") is None  # Linalg has zero-sized tensors
    fft = facts("aten.fft_fft", ["!torch.vtensor<[4],f32>"], ["!torch.vtensor<[4],complex<f32>>"])
    assert reason(fft, "stablehlo") is None  # and complex numbers


def test_the_backends_own_words_win() -> None:
    assert explains("'stablehlo.slice' op inferred type(s) 'tensor<2x3xf32>' are incompatible")
    assert not explains("failed to legalize operation 'torch.aten.erfinv' that was explicitly "
                        "marked illegal")


_T = "!torch.vtensor<[3,4],f32>"
_I = "!torch.vtensor<[6,4],si64>"


@pytest.mark.parametrize(("op", "backend", "words"), [
    (facts("aten.scatter_add", [_T, "!torch.int", _I, _T], [_T], [None, "0", None, None]),
     "tosa", "it adds into its target: TOSA's one scatter, `tosa.scatter`, writes values in "
             "place, and torch-mlir has no TOSA conversion of an accumulating "
             "`aten.scatter_add`"),
    (facts("aten.index_put.hacked_twin", [_T, "!torch.list<vtensor>", _T, "!torch.bool"], [_T],
           [None, None, None, "true"]),
     "tosa", "it accumulates (`accumulate=True`): TOSA's one scatter, `tosa.scatter`, writes "
             "values in place, and torch-mlir has no TOSA conversion of an accumulating "
             "`aten.index_put.hacked_twin`"),
    (facts("aten.scatter_reduce.two", [_T, "!torch.int", _I, _T, "!torch.str", "!torch.bool"],
           [_T], [None, "0", None, None, '"sum"', "true"]),
     "stablehlo", 'it reduces (`reduce="sum"`): torch-mlir\'s StableHLO conversion has '
                  '`scatter` and `scatter_add` only, not `aten.scatter_reduce.two`'),
    (facts("runtime.assert", ["!torch.bool"], []), "stablehlo",
     "a check torch.export added to run with the module (`torch._check`, or the bounds of a "
     "size computed from data), which torch-mlir's StableHLO pipeline has no conversion for"),
    (facts("aten.floordiv.int", ["!torch.int", "!torch.int"], ["!torch.int"], [None, "8"]),
     "tosa", "TOSA works on tensors only, and its result is a Python `int` computed at run "
             "time (from a tensor's value or a dynamic size)"),
])
def test_each_scatter_assert_and_scalar_reason(op: OpFacts, backend: str, words: str) -> None:
    assert reason(op, backend) == words


def test_a_scatter_that_writes_gets_no_accumulation_reason() -> None:
    writes = facts("aten.index_put.hacked_twin", [_T, "!torch.list<vtensor>", _T, "!torch.bool"],
                   [_T], [None, None, None, "false"])
    assert reason(writes, "tosa") is None
    assert reason(facts("aten.scatter_add", [_T, "!torch.int", _I, _T], [_T]), "linalg") is None


def test_trigonometry_tosa_has_no_operation_for() -> None:
    atanh = facts("aten.atanh", ["!torch.vtensor<[1,6,3],f32>"], ["!torch.vtensor<[1,6,3],f32>"])
    assert reason(atanh, "tosa") == ("TOSA has no `atanh` operation, and torch-mlir's TOSA "
                                     "conversion does not build it from others")
    assert reason(atanh, "stablehlo") is None

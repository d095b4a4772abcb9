"""The llvm/torch-mlir#4743 shim (worker/shims/legacy_view_shim.py): which views torch-mlir's legacy
Linalg view lowering narrows, that the Linalg target reroutes exactly those, and that the
result runs right at several sizes while torch-mlir's own lowering does not.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from torch_mlir_lens.protocol.results import ErrorKind
from torch_mlir_lens.rules.targets import BACKEND_PIPELINES
from torch_mlir_lens.worker import lowering
from torch_mlir_lens.worker.shims import legacy_view_shim as shim
from torch_mlir_lens.worker.verify.job import verify_lowerer

MODELS = Path(__file__).parent / "models" / "dynamic_views.py"
USERS = [str(MODELS)]
U = shim.UNKNOWN
NARROWED = re.compile(r"tensor\.cast %\S+ : tensor<\?x\?x32xf32> to tensor<\?x1x32xf32>")


def _models() -> ModuleType:
    name = "lens_dynamic_views"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, MODELS)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _line_of(needle: str) -> int:
    return next(i for i, text in enumerate(MODELS.read_text().splitlines(), 1) if needle in text)


def _size(dim: int) -> shim.SizeItem:
    return shim.SizeItem(input_dim=dim)


def _const(value: int) -> shim.SizeItem:
    return shim.SizeItem(constant=value)


COMPUTED = shim.SizeItem()  # e.g. aten.mul.int of two sizes


@pytest.mark.parametrize("shape, items, narrows", [
    # nn.Linear on [batch, seq, 32]: [batch * seq, 32] (#4743), and with -1 (#3852)
    ([U, U, 32], [COMPUTED, _const(32)], True),
    ([U, U, 32], [_const(-1), _const(32)], True),
    ([U, U, 8, 8], [COMPUTED, _const(64)], True),
    # split / merge the static head dims next to sizes taken from the input: right
    ([U, U, 32], [_size(0), _size(1), _const(4), _const(8)], False),
    ([U, U, 4, 8], [_size(0), _size(1), _const(32)], False),
    # one dynamic dim, or a static leading dim before the merge: right
    ([U, 8, 4], [COMPUTED, _const(4)], False),
    ([3, U, U], [_const(3), COMPUTED], False),
    # everything into one dim, or out of one: right
    ([U, U, 32], [_const(-1)], False),
    ([U], [COMPUTED, _const(32)], False),
    # sizes from elsewhere for every dim (two dynamic output dims): the pattern gives up
    ([U, 32], [COMPUTED, COMPUTED, _const(32)], False),
    ([2, 3], [_const(3), _const(2)], False),
])
def test_which_views_the_legacy_pattern_narrows(shape: list[int], items: list[shim.SizeItem],
                                                narrows: bool) -> None:
    assert shim.legacy_view_pairs_unchecked(shape, items) is narrows


@pytest.fixture(scope="module")
def linear() -> tuple[torch.nn.Module, tuple[torch.Tensor], object, lowering.ProgramLowerer]:
    torch.manual_seed(0)
    model = _models().TwoDynamicDimsLinear().eval()
    x = torch.randn(2, 5, 32)
    spec = {"x": {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}}
    program = lowering.export_program(model, (x,), {}, user_files=USERS, dynamic_shapes=spec)
    lowerer = lowering.ProgramLowerer(program, module_name="TwoDynamicDimsLinear",
                                      user_files=USERS)
    return model, (x,), spec, lowerer


def _plain_linalg(lowerer: lowering.ProgramLowerer) -> object:
    """torch-mlir's own Linalg lowering of the program (no shim)."""
    module = lowerer.torch_module().clone()
    lowering.run_pipeline(module, BACKEND_PIPELINES["linalg"])
    return module


def test_upstream_still_narrows(linear) -> None:
    """Fails the day the pinned torch-mlir lowers this view right: then drop the shim (its
    module docstring says how)."""
    *_, lowerer = linear
    assert NARROWED.search(str(_plain_linalg(lowerer))), "upstream fixed #4743: drop the shim"


def test_the_linalg_target_collapses_both_dims_instead(linear) -> None:
    *_, lowerer = linear
    assert len(shim.narrowing_views(lowerer.torch_module())) == 1
    ir = str(lowerer.module_for("linalg"))
    assert not NARROWED.search(ir)
    assert "tensor.collapse_shape %arg0 [[0, 1], [2]] : tensor<?x?x32xf32> into " \
           "tensor<?x32xf32>" in ir
    # The cached torch-backend module itself is left as torch-mlir made it.
    assert len(shim.narrowing_views(lowerer.torch_module())) == 1


def test_verify_proves_it_at_several_sizes_and_names_the_line_upstream_breaks(linear) -> None:
    model, args, spec, lowerer = linear
    fixed = verify_lowerer(lowerer, model, args, {}, dynamic_shapes=spec)
    assert fixed.ok, fixed.message
    assert len(fixed.sizes) >= 3 and all(c.ok for c in fixed.sizes)
    assert {d.size for c in fixed.sizes for d in c.dims if d.name == "seq"} >= {5, 2, 7}

    upstream = lowering.ProgramLowerer(lowerer.program, module_name="TwoDynamicDimsLinear",
                                       user_files=USERS)
    upstream._linalg_source = upstream.torch_module()  # torch-mlir's lowering, unshimmed
    broken = verify_lowerer(upstream, model, args, {}, dynamic_shapes=spec)
    assert not broken.ok and broken.kind == ErrorKind.VERIFY_MISMATCH
    assert all(not c.ok for c in broken.sizes)
    assert broken.divergence is not None
    assert broken.divergence.line == _line_of("return self.fc(x)")
    # The narrowing itself: the compiled matmul sees [batch, 32] rows, eager [batch * seq, 32].
    assert "shape [2, 32], eager [10, 32]" in broken.divergence.message
    assert "at batch=2, seq=5" in broken.divergence.message


def test_only_the_narrowing_attention_views_move() -> None:
    """(tests/test_verify_sizes_cli.py verifies this module at four sizes.)"""
    torch.manual_seed(0)
    model = _models().AttentionViews().eval()
    x = torch.randn(2, 5, 32)
    spec = {"x": {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq", max=16)}}
    program = lowering.export_program(model, (x,), {}, user_files=USERS, dynamic_shapes=spec)
    lowerer = lowering.ProgramLowerer(program, module_name="AttentionViews", user_files=USERS)
    views = str(lowerer.torch_module()).count("torch.aten.view ")
    narrowing = shim.narrowing_views(lowerer.torch_module())
    assert 0 < len(narrowing) < views
    linalg = str(lowerer.module_for("linalg"))
    assert linalg.count("tensor.collapse_shape %") >= len(narrowing)
    assert not re.search(r"tensor\.cast %\S+ : tensor<\?x\?x32xf32> to tensor<\?x1x", linalg)


def test_a_custom_pipeline_that_converts_to_linalg_warns_at_the_line(linear) -> None:
    *_, lowerer = linear
    pipeline = "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)"
    result = lowerer.lower("custom", pipeline=pipeline)
    assert result.ok
    (warning,) = result.diagnostics
    assert (warning.severity, warning.kind) == ("warning", ErrorKind.KNOWN_MISCOMPILE)
    assert (warning.file, warning.line) == (str(MODELS), _line_of("return self.fc(x)"))
    assert shim.UPSTREAM_ISSUE in warning.message
    # A pipeline that does not reach Linalg has nothing to warn about.
    tosa = lowerer.lower("custom", pipeline=BACKEND_PIPELINES["stablehlo"])
    assert not [d for d in tosa.diagnostics if d.kind == ErrorKind.KNOWN_MISCOMPILE]

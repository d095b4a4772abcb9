"""Export, pipelines, print-after-all, export files and export failures (real torch-mlir)."""

from __future__ import annotations

import gc
import importlib.util
import os
import runpy
import shlex
import subprocess
import sys
import weakref
from typing import Any

import pytest
import torch
from torch_mlir import ir

from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.lowering import (
    LowerOptions,
    ProgramLowerer,
    export_program,
    lower_module,
    parsing_context,
)
from torch_mlir_lens.worker.lowering.writing import write_export, write_repro

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "small_models.py")
FAILURES = os.path.join(ROOT, "examples", "export_failures.py")
CUSTOM = ("builtin.module(func.func(torch-decompose-complex-ops),"
          "torch-backend-to-linalg-on-tensors-backend-pipeline)")


@pytest.fixture(scope="module")
def mlp() -> ProgramLowerer:
    ns = runpy.run_path(MODELS)
    program = export_program(ns["MLP"](), (torch.randn(2, 16),), {}, user_files={MODELS})
    return ProgramLowerer(program, module_name="MLP", user_files={MODELS})


def _parse(data: str | bytes) -> ir.Module:
    return ir.Module.parse(data, parsing_context())


def test_one_import_serves_every_target(mlp: ProgramLowerer) -> None:
    raw = mlp.raw_module()
    results = [mlp.lower(t) for t in ("torch", "linalg", "tosa", "stablehlo")]
    assert all(r.ok for r in results)
    assert mlp.raw_module() is raw
    assert "linalg.matmul" in results[1].ir
    assert "tosa." in results[2].ir and "stablehlo." in results[3].ir
    assert "torch.aten" in results[0].ir and "torch.aten" not in results[1].ir
    assert results[1].timings["import"] == 0.0  # imported before, not again


def test_fx_target_prints_the_aten_graph_with_a_map(mlp: ProgramLowerer) -> None:
    res = mlp.lower("fx")
    assert res.ok and "torch.ops.aten" in res.ir
    lines = res.ir.splitlines()
    gelu_lines = [i for i, t in enumerate(lines, start=1) if "aten.gelu" in t]
    assert gelu_lines
    with open(MODELS) as f:
        gelu_src = next(i for i, t in enumerate(f, start=1) if "F.gelu(h)" in t)
    assert all(any(m.ir_line == i and m.line == gelu_src for m in res.map) for i in gelu_lines)


def test_custom_pipeline(mlp: ProgramLowerer) -> None:
    res = mlp.lower(None, pipeline=CUSTOM)
    assert res.ok and res.target == "custom"
    assert "linalg.matmul" in res.ir and res.map


@pytest.mark.parametrize("pipeline", [
    "builtin.module(no-such-pass)",
    "builtin.module(func.func(canonicalize)",
])
def test_bad_pipeline(mlp: ProgramLowerer, pipeline: str) -> None:
    with pytest.raises(LensError) as info:
        mlp.lower(None, pipeline=pipeline)
    assert info.value.kind == "bad-pipeline"


def test_unknown_target_is_a_bad_request(mlp: ProgramLowerer) -> None:
    with pytest.raises(LensError) as info:
        mlp.lower("spirv")
    assert info.value.kind == "bad-request"


def test_print_after_all_names_each_pass(mlp: ProgramLowerer) -> None:
    res = mlp.lower("linalg", options=LowerOptions(print_after_all=True))
    assert res.ok and res.passes
    names = [p.name for p in res.passes]
    assert "convert-torch-to-linalg" in names
    assert names.index("convert-torch-to-linalg") < len(names) - 1
    assert all(p.ir.strip() for p in res.passes)
    converted = res.passes[names.index("convert-torch-to-linalg")].ir
    assert "linalg." in converted
    torch_res = mlp.lower("torch", options=LowerOptions(print_after_all=True))
    assert torch_res.passes and "torch-decompose-complex-ops" in [p.name for p in torch_res.passes]


@pytest.mark.parametrize("target", ["torch", "linalg", "tosa", "stablehlo"])
@pytest.mark.parametrize("bytecode", [False, True])
def test_export_writes_a_file_mlir_reparses(mlp: ProgramLowerer, tmp_path: Any,
                                            target: str, bytecode: bool) -> None:
    out = tmp_path / f"mlp.{target}.{'mlirbc' if bytecode else 'mlir'}"
    size = write_export(mlp, target, str(out), bytecode=bytecode, options=LowerOptions())
    data = out.read_bytes()
    assert size == len(data) > 0
    module = _parse(data if bytecode else data.decode())
    assert module.operation.verify()
    assert os.listdir(tmp_path) == [out.name]  # no temp file left behind
    if not bytecode:
        assert "dialect_resources" in data.decode()  # full weights: the file is complete


def test_export_of_the_custom_pipeline(mlp: ProgramLowerer, tmp_path: Any) -> None:
    assert mlp.lower(None, pipeline=CUSTOM).ok
    out = tmp_path / "custom.mlir"
    write_export(mlp, "custom", str(out), bytecode=False)
    assert "linalg.matmul" in out.read_text()


def test_weights_elided_in_tosa_text_too(mlp: ProgramLowerer) -> None:
    """TOSA folds weights into inline dense<"0x..."> constants: those are elided as well."""
    res = mlp.lower("tosa")
    assert '"0x' not in res.ir
    assert max(len(line) for line in res.ir.splitlines()) < 1000


def test_export_of_a_failing_target_raises_and_writes_nothing(tmp_path: Any) -> None:
    example = os.path.join(ROOT, "examples", "unsupported_ops.py")
    ns = runpy.run_path(example)
    program = export_program(ns["ShiftedFeatures"](), (torch.randn(4, 16),), {},
                             user_files={example})
    lowerer = ProgramLowerer(program, module_name="ShiftedFeatures", user_files={example})
    out = tmp_path / "x.mlir"
    with pytest.raises(LensError) as info:
        write_export(lowerer, "tosa", str(out), bytecode=False)
    assert info.value.kind == "lowering-error"
    assert not os.listdir(tmp_path)


def test_repro_writes_torch_ir_and_the_command(mlp: ProgramLowerer, tmp_path: Any) -> None:
    repro = write_repro(mlp, "tosa", str(tmp_path))
    assert os.path.exists(repro["mlir_path"])
    assert "torch-backend-to-tosa-backend-pipeline" in repro["command"]
    assert repro["command"].startswith("torch-mlir-opt ")
    with open(repro["mlir_path"]) as f:
        text = f.read()
    assert "torch.aten" in text and "loc(" in text
    _parse(text)


def test_repro_command_reproduces_the_failure(tmp_path: Any) -> None:
    """The bundled torch-mlir-opt, run as written, fails on the same op and line."""
    opt = os.path.join(os.path.dirname(sys.executable), "torch-mlir-opt")
    if not os.path.exists(opt):
        pytest.skip("torch-mlir-opt is not installed next to python")
    example = os.path.join(ROOT, "examples", "unsupported_ops.py")
    ns = runpy.run_path(example)
    program = export_program(ns["ShiftedFeatures"](), (torch.randn(4, 16),), {},
                             user_files={example})
    lowerer = ProgramLowerer(program, module_name="ShiftedFeatures", user_files={example})
    repro = write_repro(lowerer, "tosa", str(tmp_path))
    argv = shlex.split(repro["command"])
    assert argv[0] == "torch-mlir-opt"
    done = subprocess.run([opt, *argv[1:]], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert f"{example}:42:0: error: failed to legalize operation" in done.stderr


def test_strict_export_of_an_imported_module() -> None:
    spec = importlib.util.spec_from_file_location("lens_export_failures", FAILURES)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(LensError) as info:
        export_program(module.DataDependentBranch(), (torch.randn(4, 8),), {},
                       user_files={FAILURES}, strict=True)
    assert info.value.kind == "export-error"
    assert info.value.line == _failure_line("if h.sum() > 0:")


def test_llvm_target(mlp: ProgramLowerer) -> None:
    res = mlp.lower("llvm")
    assert res.ok, res.diagnostics
    assert "llvm.func" in res.ir and res.map


def test_timings_of_lower_module() -> None:
    ns = runpy.run_path(MODELS)
    res = lower_module(ns["MLP"](), (torch.randn(2, 16),), {}, module_name="MLP",
                       user_files={MODELS}, targets=["linalg", "tosa"])
    assert [r.target for r in res] == ["linalg", "tosa"]
    assert set(res[0].timings) == {"export", "import", "lower", "print", "total"}
    assert res[0].timings["total"] >= res[0].timings["export"] > 0
    assert "export" not in res[1].timings  # paid once


def _failure_line(text: str) -> int:
    with open(FAILURES) as f:
        for i, line in enumerate(f, start=1):
            if text in line and not line.lstrip().startswith(("#", '"')) and "`" not in line:
                return i
    raise AssertionError(text)


@pytest.mark.parametrize(("module", "source", "words"), [
    ("DataDependentBranch", "if h.sum() > 0:", "data-dependent"),
    ("NumpyRoundTrip", "clipped = y.numpy()", "numpy"),
    ("ItemAsSize", "keep = int(x.abs().max().item())", "data-dependent"),
    ("PointerHash", "salt = x.data_ptr()", "data pointer"),
])
def test_export_failures_are_located(module: str, source: str, words: str) -> None:
    ns = runpy.run_path(FAILURES)
    with pytest.raises(LensError) as info:
        export_program(ns[module](), (torch.randn(4, 8),), {}, user_files={FAILURES})
    err = info.value
    assert err.kind == "export-error"
    assert err.file == FAILURES
    assert err.line == _failure_line(source)
    assert words in err.message.lower()
    assert len(err.message) < 600


def test_lower_module_turns_an_export_failure_into_results() -> None:
    ns = runpy.run_path(FAILURES)
    res = lower_module(ns["DataDependentBranch"](), (torch.randn(4, 8),), {},
                       module_name="DataDependentBranch", user_files={FAILURES},
                       targets=["linalg", "tosa"])
    assert [r.ok for r in res] == [False, False]
    for r in res:
        [d] = r.diagnostics
        assert d.kind == "export-error" and d.line == _failure_line("if h.sum() > 0:")


def test_dynamic_shapes_reach_the_ir() -> None:
    ns = runpy.run_path(MODELS)
    batch = torch.export.Dim("batch", min=2, max=64)
    [res] = lower_module(ns["MLP"](), (torch.randn(4, 16),), {}, module_name="MLP",
                         user_files={MODELS}, targets=["linalg"],
                         dynamic_shapes={"x": {0: batch}})
    assert res.ok and "tensor<?x16xf32>" in res.ir


def test_importer_failure_is_a_located_result(tmp_path: Any) -> None:
    """torch-mlir's FX importer rejects linalg.inv ('with_effects'): an ok=False result."""
    path = tmp_path / "inverse.py"
    path.write_text(
        "import torch\n"
        "class Inverse(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.linalg.inv(x @ x.T + torch.eye(4))\n"
    )
    ns = runpy.run_path(str(path))
    program = export_program(ns["Inverse"](), (torch.randn(4, 4),), {}, user_files={str(path)})
    lowerer = ProgramLowerer(program, module_name="Inverse", user_files={str(path)})
    assert lowerer.lower("fx").ok
    res = lowerer.lower("linalg")
    assert not res.ok
    [diag] = res.diagnostics
    assert diag.kind == "export-error" and "with_effects" in diag.message
    assert (diag.file, diag.line) == (str(path), 4)


def test_a_dropped_lowerer_frees_its_modules_without_the_collector() -> None:
    """A lowerer in a reference cycle keeps its MLIR modules (megabytes the collector does not
    count) until a rare full collection: a worker grew ~2 MB per lowering that way."""
    example = os.path.join(ROOT, "examples", "unsupported_ops.py")
    ns = runpy.run_path(example)
    program = export_program(ns["ShiftedFeatures"](), (torch.randn(4, 16),), {},
                             user_files={example})
    lowerer = ProgramLowerer(program, module_name="ShiftedFeatures", user_files={example})
    results = [lowerer.lower(target) for target in ("linalg", "tosa", "stablehlo")]
    assert any(r.diagnostics for r in results)  # the failure listing ran, and used the import
    gone = weakref.ref(lowerer)
    gc.disable()
    try:
        del lowerer
        assert gone() is None
    finally:
        gc.enable()


class Bf16Scaled(torch.nn.Module):
    """bfloat16 weights and constants, as many released checkpoints are (RecurrentGemma's
    constants made torch-mlir's importer ask for the `ml_dtypes` package)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8, dtype=torch.bfloat16)
        self.register_buffer("scale", torch.tensor(0.5, dtype=torch.bfloat16), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.scale * torch.tensor(2.0, dtype=torch.bfloat16)


def test_bfloat16_constants_import_on_every_backend() -> None:
    here = os.path.abspath(__file__)
    program = export_program(Bf16Scaled(), (torch.randn(2, 8, dtype=torch.bfloat16),), {},
                             user_files={here})
    lowerer = ProgramLowerer(program, module_name="Bf16Scaled", user_files={here})
    for target in ("linalg", "tosa", "stablehlo"):
        result = lowerer.lower(target)
        assert result.ok, (target, [d.message for d in result.diagnostics])
        assert "bf16" in result.ir

"""IREE targets in the worker (worker/iree/), with the real torch-mlir and the real IREE 3.13:
the dispatch regions mapped to lines, IREE's own errors at the user's line with the failing
pass, a torch-mlir culprit said once, the GPU targets compiled here, Verify on IREE's runtime
(several sizes, the first diverging line, the time against eager), a profile per dispatch and
line, a program without weights compiled with named parameters, and a .vmfb that IREE's
runtime runs outside the product with eager's results."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.rules.verdict import backend_verdict
from torch_mlir_lens.worker.iree import runtime
from torch_mlir_lens.worker.job_handlers import run_job

MODEL = textwrap.dedent('''\
    import torch
    from torch import nn
    import torch.nn.functional as F


    # torch-mlir-lens: inputs=(torch.randn(2, 16),)
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.fc1 = nn.Linear(16, 32)
            self.fc2 = nn.Linear(32, 4)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            return self.fc2(h)


    # torch-mlir-lens: inputs=(torch.randn(4, 8, dtype=torch.float64),)
    class TanhF64(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8).double()

        def forward(self, x):
            return torch.tanh(self.lin(x))


    # torch-mlir-lens: inputs=(torch.rand(4, 8) * 1.8 - 0.9,)
    class Gauss(nn.Module):
        def forward(self, x):
            y = x * 2
            return torch.special.erfinv(y / 2)


    # torch-mlir-lens: inputs=(torch.randn(3, 8),)
    # torch-mlir-lens: dynamic={"x": {0: "batch"}}
    class Dyn(nn.Module):
        def forward(self, x):
            return (x * 2).softmax(-1)


    # torch-mlir-lens: inputs=(torch.randn(4, 512),)
    class Sums(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.w = nn.Parameter(torch.randn(512, 64))

        def forward(self, x):
            y = x * 3.0
            z = y @ self.w
            return z.sin()
    ''')
LINES = {text.strip(): n for n, text in enumerate(MODEL.splitlines(), start=1)}
RELU, HEAD = LINES["h = F.relu(self.fc1(x))"], LINES["return self.fc2(h)"]
TANH, MATMUL = LINES["return torch.tanh(self.lin(x))"], LINES["z = y @ self.w"]
ERFINV = LINES["return torch.special.erfinv(y / 2)"]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("iree") / "model.py"
    path.write_text(MODEL)
    return path


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply["ok"], reply.get("error")
    return reply["result"]


def _lower(model: Path, module: str, targets: list[str], **extra: Any) -> list[LowerResult]:
    reply = _ok(run_job({"id": 1, "op": "lower", "path": str(model), "module": module,
                         "targets": targets, **extra}))
    return [LowerResult.from_json(r) for r in reply["results"]]


def test_iree_cpu_shows_its_dispatch_regions_mapped_to_the_lines_fused_into_them(
        model: Path) -> None:
    linalg, cpu = _lower(model, "MLP", ["linalg", "iree-cpu"])
    assert linalg.ok and cpu.ok and cpu.target == "iree-cpu"
    assert cpu.ir.startswith("// IREE CPU (host), IREE 3.13.0: 2 dispatch regions")
    assert "flow.executable private @main_dispatch_0" in cpu.ir
    lines = {(d["file"], d["line"]): d["dispatches"] for d in cpu.stats["line_dispatches"]}
    assert lines == {(str(model), RELU): [0], (str(model), HEAD): [1]}  # relu fused with fc1
    dispatches = cpu.stats["dispatches"]
    assert [d["lines"] for d in dispatches] == [[{"file": str(model), "line": RELU}],
                                                [{"file": str(model), "line": HEAD}]]
    # The pane's map links each dispatch's header line and its ops to the source line.
    text = cpu.ir.splitlines()
    for d in dispatches:
        assert text[d["ir_line"] - 1].lstrip().startswith(f"flow.executable private @{d['name']}")
        mapped = {m.line for m in cpu.map if m.ir_line == d["ir_line"]}
        assert mapped == {d["lines"][0]["line"]}
    assert cpu.stats["iree"]["version"] == "3.13.0" and cpu.stats["iree"]["vmfb_bytes"] > 0
    assert not cpu.diagnostics and backend_verdict(cpu).ok


def test_iree_errors_land_on_the_users_line_with_iree_words_and_the_failing_pass(
        model: Path) -> None:
    cpu, vulkan = _lower(model, "TanhF64", ["iree-cpu", "iree-vulkan"])
    assert not cpu.ok and not vulkan.ok
    (link,) = cpu.diagnostics
    assert (link.kind, link.file, link.line) == ("compile-error", str(model), TANH)
    assert "undefined symbol: tanh" in link.message  # the linker's words, not "see above"
    assert "in IREE's pass `iree-hal-serialize-target-executables`" in link.message
    # Vulkan demotes f64 to f32 (IREE's default there), which this module's weights fail.
    (demoted,) = vulkan.diagnostics
    assert (demoted.file, demoted.line, demoted.target) == (str(model), TANH, "iree-vulkan")
    assert "`iree-input-conversion-demote-f64-to-f32`" in demoted.message
    assert backend_verdict(cpu).error is link  # the verdict's error, like any backend's


def test_a_module_torch_mlir_rejects_reports_that_culprit_on_the_iree_target_alone(
        model: Path) -> None:
    linalg, cpu = _lower(model, "Gauss", ["linalg", "iree-cpu"])
    assert not linalg.ok and not cpu.ok
    assert [(d.message, d.line, d.kind) for d in cpu.diagnostics] == [
        (d.message, d.line, d.kind) for d in linalg.diagnostics]
    assert cpu.diagnostics[0].line == ERFINV and {d.target for d in cpu.diagnostics} == {
        "iree-cpu"}
    assert len(backend_verdict(cpu).culprits) == 1 and not cpu.stats["iree"]["compiled"]


def test_gpu_targets_compile_without_a_gpu_and_say_they_did_not_run(model: Path) -> None:
    for result in _lower(model, "MLP", ["iree-rocm", "iree-vulkan"]):
        assert result.ok and result.stats["dispatches"], result.diagnostics
        notes = [d for d in result.diagnostics if d.kind == "not-run"]
        if runtime.device_error(result.stats["iree"]["device"]) is None:
            assert not notes  # a machine with that GPU
        else:
            assert [n.severity for n in notes] == ["information"]
            assert notes[0].message.endswith("compiled, not run: no device")


def test_hopper_is_refused_as_this_iree_build_refuses_it(model: Path) -> None:
    (cuda,) = _lower(model, "MLP", ["iree-cuda"], iree_archs={"iree-cuda": "sm_90"})
    (refusal,) = cuda.diagnostics
    assert refusal.kind == "bad-request" and not cuda.ok
    assert "cannot compile for the CUDA architecture sm_90" in refusal.message
    assert "missing GPU target in #hal.executable.target" in refusal.message
    assert "compile for sm_80, sm_86 or sm_89" in refusal.message


def test_verify_on_iree_cpu_matches_eager_and_times_both_on_the_same_threads(
        model: Path) -> None:
    result = _ok(run_job({"id": 2, "op": "verify", "path": str(model), "module": "MLP",
                          "target": "iree-cpu"}))
    assert result["ok"] and result["message"].startswith("✓ matches eager")
    speed = result["speed"]
    assert speed["target"] == "iree-cpu" and speed["threads"] == torch.get_num_threads()
    assert speed["compiled_ms"] > 0 and speed["eager_ms"] > 0


def test_verify_runs_a_dynamic_module_at_several_sizes(model: Path) -> None:
    result = _ok(run_job({"id": 3, "op": "verify", "path": str(model), "module": "Dyn",
                          "target": "iree-cpu"}))
    assert result["ok"], result["message"]
    assert len(result["sizes"]) >= 3 and all(size["ok"] for size in result["sizes"])


def test_a_mismatch_names_the_first_line_iree_computes_differently(model: Path) -> None:
    # No tolerance at all: IREE's matmul sums in another order than eager's, exactly
    # representable scaling does not.
    result = _ok(run_job({"id": 4, "op": "verify", "path": str(model), "module": "Sums",
                          "target": "iree-cpu", "rtol": 0.0, "atol": 0.0}))
    assert result["kind"] == "verify-mismatch"
    assert result["divergence"]["line"] == MATMUL
    assert result["message"].endswith(f"first differs at line {MATMUL}")


def test_a_profile_times_each_dispatch_and_shares_it_among_its_lines(model: Path) -> None:
    (cpu,) = _lower(model, "MLP", ["iree-cpu"], profile=True)
    assert cpu.stats["speed"]["compiled_ms"] > 0
    assert all(d["time_ms"] >= 0 for d in cpu.stats["dispatches"])
    costs = cpu.stats["line_costs"]
    assert {c["line"] for c in costs} == {RELU, HEAD}
    assert sum(c["share"] for c in costs) == pytest.approx(1.0, abs=1e-3)


def test_a_program_without_its_weights_compiles_them_as_named_parameters(model: Path) -> None:
    # Its own inputs: a program held with its weights would serve this job too.
    (cpu,) = _lower(model, "MLP", ["iree-cpu"], construct="meta", inputs="(torch.ones(3, 16),)")
    assert cpu.ok and cpu.stats["construction"] == "meta"
    facts = cpu.stats["iree"]
    assert len(facts["parameters"]) == 4  # two weights, two biases
    assert {p["type"] for p in facts["parameters"]} == {
        "tensor<32x16xf32>", "tensor<32xf32>", "tensor<4x32xf32>", "tensor<4xf32>"}
    assert facts["left_out"].startswith("4 weights (")
    assert any("left out of the module" in d.message for d in cpu.diagnostics)


NO_PRODUCT = textwrap.dedent('''\
    import runpy, sys

    class NoProduct:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "torch_mlir_lens":
                raise ImportError("the snippet must not need Torch-MLIR Lens")

    sys.meta_path.insert(0, NoProduct())
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
    ''')


def test_the_exported_vmfb_runs_outside_the_product_with_eagers_results(
        model: Path, tmp_path: Path) -> None:
    job = {"id": 5, "path": str(model), "module": "MLP", "target": "iree-cpu"}
    written = _ok(run_job({**job, "op": "export", "output": str(tmp_path / "mlp.vmfb")}))
    assert written["bytes"] == (tmp_path / "mlp.vmfb").stat().st_size > 0
    code = _ok(run_job({**job, "op": "export-code"}))["code"]
    assert "torch_mlir_lens" not in code and "import iree.runtime" in code
    (tmp_path / "mlp.py").write_text(code)
    x = torch.randn(2, 16)
    np.save(tmp_path / "x.npy", x.numpy())
    run = subprocess.run([sys.executable, "-I", "-c", NO_PRODUCT, str(tmp_path / "mlp.py"),
                          "--inputs", str(tmp_path / "x.npy"), "--save-outputs", str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    namespace: dict[str, Any] = {}
    exec(compile(MODEL, str(model), "exec"), namespace)
    with torch.no_grad():
        expected = namespace["MLP"]()(x).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "output0.npy"), expected, rtol=1e-5,
                               atol=1e-5)


def test_a_library_models_dispatches_name_the_library_lines_inside_the_users_call() -> None:
    zoo = Path(__file__).resolve().parents[1] / "models" / "hf_zoo.py"
    (cpu,) = _lower(zoo, "TinyGPT2", ["iree-cpu"])
    assert cpu.ok
    call = zoo.read_text().splitlines().index(
        "        return self.lm(input_ids=ids).last_hidden_state") + 1
    dispatches = cpu.stats["dispatches"]
    assert {(line["line"]) for d in dispatches for line in d["lines"]} == {call}
    inside = [Path(line["file"]) for d in dispatches for line in d.get("library_lines", [])]
    assert "modeling_gpt2.py" in {f.name for f in inside}
    assert all("transformers" in f.parts for f in inside)  # the library's lines, no others
    assert [d["index"] for d in dispatches] == list(range(len(dispatches)))  # unique numbers
    assert cpu.frames  # the pane's library chains, as every target's

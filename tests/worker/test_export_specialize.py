"""A proven way past torch.export's data-dependent refusals: the export specialised to the
example's decisions (`export.specialize`, worker/rewrites/specialize.py), proven before it is
offered (worker/rewrite_jobs/specialize_proof.py), applied by `--rewrites auto` and by the
comment's `rewrites=` like any rewrite, and written by `export --emit-python`. Real jobs through
`run_job` and the real command line, the real torch.export and torch-mlir.

The modules are shaped like library code: a tabular encoder that zeroes the rows of a
"missing" category only when the batch has one (`if is_special.any():`, which any batch with a
missing code decides the same way), and a head that picks a branch from the batch's net sign
(`if returns.sum() > 0:`), which the second input decides the other way: the specialisation is
wrong there, and refused.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from torch_mlir_lens.worker.job_handlers import run_job
from torch_mlir_lens.worker.rewrite_jobs.pin_proof import second_inputs
from torch_mlir_lens.worker.rewrite_jobs.specialize_proof import prove_specialization

MODEL = textwrap.dedent(
    """\
    import torch
    from torch import nn

    MISSING = 3  # the category code of a missing value


    # torch-mlir-lens: inputs=(torch.randn(6, 5), torch.tensor([0, 3, 1, 2, 1, 0]))
    class TabularEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)  # the same weights in every process
            self.embed = nn.Embedding(4, 5)
            self.proj = nn.Linear(5, 8)

        def forward(self, numeric, codes):
            is_special = codes == MISSING
            h = numeric + self.embed(codes)
            if is_special.any():
                h = torch.where(is_special[:, None], torch.zeros_like(h), h)
            return self.proj(h)


    # torch-mlir-lens: inputs=(torch.tensor([[2.0, -1.9]]),)
    class DirectionalHead(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.long = nn.Linear(2, 3)
            self.short = nn.Linear(2, 3)

        def forward(self, returns):
            if returns.sum() > 0:
                return self.long(returns)
            return self.short(returns)
    """
)
REFUSED = "`if is_special.any():` (line 18)"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("specialize") / "tabular.py"
    path.write_text(MODEL)
    return path


def _lower(path: Path, module: str, text: str | None = None, **extra: Any) -> list[Any]:
    reply = run_job({"id": 1, "op": "lower", "path": str(path), "module": module,
                     "targets": ["linalg", "tosa"], "text": text or path.read_text(), **extra})
    assert reply["ok"], reply
    return list(reply["result"]["results"])


def test_a_branch_on_a_mask_gets_the_proven_specialisation(model: Path) -> None:
    results = _lower(model, "TabularEncoder")
    [diag] = results[0]["diagnostics"]
    assert diag["kind"] == "export-error" and diag["line"] == 18
    assert ("a proven way past it: `# torch-mlir-lens: rewrites=export.specialize` exports "
            f"the module specialised to the example's decisions of {REFUSED}: the graph holds "
            "only for inputs that decide these lines the same way" in diag["message"])


def test_rewrites_auto_lowers_it_on_linalg(model: Path) -> None:
    results = _lower(model, "TabularEncoder", rewrites=["auto"])
    assert [r["ok"] for r in results] == [True, True], results
    assert all(r["rewrites"] == ["export.specialize"] for r in results)
    assert "linalg.matmul" in results[0]["ir"]


def test_the_comment_line_specialises_it_and_verify_matches_eager(model: Path) -> None:
    text = model.read_text().replace(
        "class TabularEncoder", "# torch-mlir-lens: rewrites=export.specialize\n"
                                "class TabularEncoder")
    results = _lower(model, "TabularEncoder", text)
    assert all(r["ok"] and r["rewrites"] == ["export.specialize"] for r in results), results
    reply = run_job({"id": 2, "op": "verify", "path": str(model), "module": "TabularEncoder",
                     "text": text})
    assert reply["ok"] and reply["result"]["ok"], reply


def test_the_rewrites_job_offers_it_for_every_backend(model: Path) -> None:
    """What `check` and the editor's quick fix read: one verified offer per backend."""
    reply = run_job({"id": 3, "op": "rewrites", "path": str(model), "module": "TabularEncoder",
                     "text": model.read_text(), "targets": ["linalg", "tosa"]})
    assert reply["ok"], reply
    offers = reply["result"]["offers"]
    assert [(o["target"], o["op"], o["rewrites"], o["verified"]) for o in offers] == [
        ("linalg", "torch.export", ["export.specialize"], True),
        ("tosa", "torch.export", ["export.specialize"], True)]


def test_a_branch_the_second_input_decides_otherwise_is_refused_by_verify(
        model: Path) -> None:
    example = (torch.tensor([[2.0, -1.9]]),)
    # The premise: the example goes one way, the second input the other.
    assert example[0].sum() > 0 > second_inputs(example)[0].sum()
    namespace: dict[str, Any] = {}
    exec(compile(MODEL, str(model), "exec"), namespace)  # the file's own lines
    proof = prove_specialization(namespace["DirectionalHead"](), example, {},
                                 user_files=[str(model)], module_name="DirectionalHead")
    assert not proof.ok and proof.why.startswith("Verify on a second input: differs"), \
        proof.why
    results = _lower(model, "DirectionalHead", rewrites=["auto"])
    assert not any(r["ok"] for r in results)
    assert not any("a proven way past it" in d["message"]
                   for r in results for d in r["diagnostics"])


def test_export_emit_python_reproduces_the_specialised_ir_without_the_product(
        model: Path, tmp_path: Path) -> None:
    from tests.worker.test_export_code import NO_PRODUCT

    work = tmp_path / "cli"
    work.mkdir()
    (work / "tabular.py").write_text(MODEL)
    emitted = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "export", "tabular.py", "--module",
         "TabularEncoder", "--target", "linalg", "--rewrites", "auto", "--emit-python", "-o",
         "export_tabular.py"], cwd=work, capture_output=True, text=True, timeout=600,
        check=False)
    assert emitted.returncode == 0, emitted.stdout + emitted.stderr[-2000:]
    code = (work / "export_tabular.py").read_text()
    assert "torch.export.draft_export(" in code and "def strip_runtime_checks(" in code
    assert "def parameters_as_buffers(" in code
    assert "torch_mlir_lens" not in code
    theirs = work / "plain.mlir"
    run = subprocess.run([sys.executable, "-I", "-c", NO_PRODUCT, "export_tabular.py",
                          str(theirs)], cwd=work, capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    ours = work / "product.mlir"
    job = {"id": 4, "op": "export", "path": str(work / "tabular.py"),
           "module": "TabularEncoder", "target": "linalg", "output": str(ours),
           "rewrites": ["export.specialize"]}
    assert run_job(job)["ok"]
    assert theirs.read_text() == ours.read_text()


def test_a_decision_on_weights_follows_the_real_weights() -> None:
    """draft_export decides on the real values of inputs and buffers, not of parameters (a
    branch on `self.fc(x).sum()` went either way): the specialised export makes them buffers
    while it runs, and puts them back."""
    from torch_mlir_lens.worker.rewrites.specialize import specialised_export

    class Gated(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.fc(x)
            if h.sum() > 0:
                return h.relu()
            return -h

    for seed in range(6):
        torch.manual_seed(seed)
        module, x = Gated(), torch.randn(4, 8)
        params = dict(module.named_parameters())
        program = specialised_export(module, (x,), {})
        assert torch.equal(program.module()(x), module(x)), seed
        assert dict(module.named_parameters()) == params and not list(module.buffers())

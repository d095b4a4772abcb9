"""Export code the user owns (worker/rewrites/snippet.py): Python that reproduces the
product's IR with plain torch-mlir, run in a fresh interpreter that cannot import the product,
gives byte for byte the IR the product exports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from torch_mlir_lens.worker.job_handlers import run_job

MODEL = textwrap.dedent('''\
    import torch
    from torch import nn


    # torch-mlir-lens: inputs=(torch.randn(4, 8),)
    # torch-mlir-lens: rewrites=erfinv@tosa, erfinv@stablehlo
    class Gauss(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)  # the same weights in both processes
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            return torch.special.erfinv(torch.tanh(self.lin(x))) * 2


    # torch-mlir-lens: inputs=(torch.randn(1, 4, 16, 8),); rewrites=empty_tensors@tosa
    def partial_rotary(q):
        n = q.shape[-1]
        return q[..., :n].sin() + q[..., n:].sum(-1, keepdim=True)


    # torch-mlir-lens: inputs=(torch.randn(1, 2, 6, 7, 5),); rewrites=max_pool@tosa
    def pool(x):
        return torch.nn.functional.max_pool3d(x, 3, 2, 1, return_indices=True)[1]
    ''')

# Runs a file as __main__ with the product out of reach: importing it fails.
NO_PRODUCT = textwrap.dedent('''\
    import runpy, sys

    class NoProduct:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "torch_mlir_lens":
                raise ImportError("the export code must not need Torch-MLIR Lens")

    sys.meta_path.insert(0, NoProduct())
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
    ''')


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply["ok"], reply.get("error")
    return reply["result"]


@pytest.mark.parametrize(("module", "target", "rewrites"), [
    ("Gauss", "tosa", ["erfinv"]),
    ("Gauss", "stablehlo", ["erfinv"]),
    ("partial_rotary", "tosa", ["empty_tensors"]),
    ("pool", "tosa", ["max_pool"]),  # a dozen helpers inlined with it
])
def test_export_code_reproduces_the_ir_without_the_product(
        tmp_path: Path, module: str, target: str, rewrites: list[str]) -> None:
    model = tmp_path / "model.py"
    model.write_text(MODEL)
    job = {"id": 1, "path": str(model), "module": module, "target": target}
    code = _ok(run_job({**job, "op": "export-code"}))
    assert code["rewrites"] == rewrites
    assert "torch_mlir_lens" not in code["code"]
    assert f"# {rewrites[0]}: " in code["code"]  # the rewrite inlined, with its method
    snippet = tmp_path / "export_model.py"
    snippet.write_text(code["code"])
    ours = tmp_path / "product.mlir"
    _ok(run_job({**job, "op": "export", "output": str(ours)}))

    theirs = tmp_path / "plain.mlir"
    run = subprocess.run([sys.executable, "-I", "-c", NO_PRODUCT, str(snippet), str(theirs)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert theirs.read_text() == ours.read_text()

"""The IREE targets on the command line, through the real worker: `lower`, `verify`,
`export` and `check` take them; a missing IREE is said with what to install (exit 3, from the
command and from the worker), a bad architecture is bad input (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torch_mlir_lens.cli import iree_options
from torch_mlir_lens.cli.parser import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_NO_RUN, EXIT_OK
from torch_mlir_lens.protocol.results import LowerResult

MODEL = textwrap.dedent('''\
    import torch
    from torch import nn
    import torch.nn.functional as F


    # torch-mlir-lens: inputs=(torch.randn(2, 16),)
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 32)

        def forward(self, x):
            return F.relu(self.fc1(x))


    # torch-mlir-lens: inputs=(torch.randn(4, 8, dtype=torch.float64),)
    class TanhF64(nn.Module):
        def forward(self, x):
            return torch.tanh(x * 2)
    ''')
TANH_LINE = MODEL.splitlines().index("        return torch.tanh(x * 2)") + 1

# The command run in an interpreter that, as far as it can tell, has no IREE installed.
WITHOUT_IREE = textwrap.dedent('''\
    import importlib.metadata as md, sys

    real = md.version

    def version(name):
        if name.startswith("iree-"):
            raise md.PackageNotFoundError(name)
        return real(name)

    class NoIree:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "iree":
                raise ImportError(f"no module named {name!r}")

    md.version = version
    sys.meta_path.insert(0, NoIree())
    {run}
    ''')


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("iree_cli") / "model.py"
    path.write_text(MODEL)
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)


def test_lower_iree_cpu_as_json_with_its_dispatches(model: Path) -> None:
    run = _cli("lower", str(model), "--module", "MLP", "--target", "iree-cpu", "--json",
               cwd=model.parent)
    assert run.returncode == EXIT_OK, run.stderr
    result = json.loads(run.stdout)
    assert result["target"] == "iree-cpu" and result["ok"]
    assert [d["lines"][0]["line"] for d in result["stats"]["dispatches"]] == [13]


def test_verify_on_iree_says_the_time_beside_eagers(model: Path) -> None:
    run = _cli("verify", str(model), "--module", "MLP", "--target", "iree-cpu",
               cwd=model.parent)
    assert run.returncode == EXIT_OK, run.stderr
    assert "MLP: ✓ matches eager" in run.stdout
    assert "time per call: IREE CPU " in run.stdout and " · eager " in run.stdout


def test_export_writes_the_vmfb(model: Path) -> None:
    out = model.parent / "mlp.vmfb"
    run = _cli("export", str(model), "--module", "MLP", "--target", "iree-rocm", "-o", str(out),
               cwd=model.parent)
    assert run.returncode == EXIT_OK, run.stderr
    assert out.stat().st_size > 0 and f"wrote {out.name} (" in run.stdout


def test_check_takes_iree_targets_with_findings_at_their_lines(model: Path) -> None:
    run = _cli("check", str(model), "--targets", "iree-cpu,iree-rocm", "--format", "json",
               cwd=model.parent)
    assert run.returncode == EXIT_FAILED, run.stderr
    report = json.loads(run.stdout)
    modules = {m["name"]: m for m in report["modules"]}
    assert modules["MLP"]["targets"]["iree-cpu"]["ok"]
    assert modules["MLP"]["targets"]["iree-rocm"]["ok"]
    (finding,) = modules["TanhF64"]["findings"]
    assert (finding["rule"], finding["line"]) == ("iree-cpu/compile-error", TANH_LINE)
    assert "undefined symbol: tanh" in finding["message"]


def test_a_missing_iree_says_what_to_install(model: Path) -> None:
    argv = ["lower", str(model), "--module", "MLP", "--target", "iree-cpu"]
    command = f"from torch_mlir_lens.cli import main; sys.exit(main({argv!r}))"
    run = subprocess.run([sys.executable, "-c", WITHOUT_IREE.replace("{run}", command)],
                         cwd=model.parent, capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == EXIT_NO_RUN, run.stderr
    assert "IREE CPU needs IREE, and iree-base-compiler and iree-base-runtime are not " \
           "installed" in run.stderr
    assert "pip install 'torch-mlir-lens[iree]'" in run.stderr
    assert "Traceback" not in run.stderr


def test_the_worker_without_iree_answers_the_other_targets_and_says_why_not(
        model: Path) -> None:
    command = (
        "from torch_mlir_lens.worker.job_handlers import run_job; import json; "
        f"print(json.dumps(run_job({{'id': 1, 'op': 'lower', 'path': {str(model)!r}, "
        "'module': 'MLP', 'targets': ['linalg', 'iree-vulkan']})))")
    run = subprocess.run([sys.executable, "-c", WITHOUT_IREE.replace("{run}", command)],
                         cwd=model.parent, capture_output=True, text=True, timeout=300,
                         check=False)
    assert run.returncode == 0, run.stderr
    linalg, vulkan = (LowerResult.from_json(r)
                      for r in json.loads(run.stdout.splitlines()[-1])["result"]["results"])
    assert linalg.ok and not vulkan.ok
    (missing,) = vulkan.diagnostics
    assert missing.kind == "missing-dependency" and "pip install" in missing.message
    refusal = iree_options.refusal([vulkan], str(model))
    assert refusal is not None and refusal.code == EXIT_NO_RUN


def test_an_architecture_that_is_no_name_is_bad_input(model: Path) -> None:
    run = _cli("lower", str(model), "--module", "MLP", "--target", "iree-cuda", "--iree-arch",
               "sm_80 --iree-foo", cwd=model.parent)
    assert run.returncode == EXIT_BAD_INPUT
    assert "--iree-arch: 'sm_80 --iree-foo' is not a CUDA architecture name" in run.stderr

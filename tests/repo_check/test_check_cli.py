"""`check PATH…` as a process: bad input in one line, per-module isolation on parallel workers,
ops in library files reported there for the module that uses them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 600

HEALTHY = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Healthy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''
CRASHING = '''import ctypes

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Crash(nn.Module):
    def forward(self, x):
        ctypes.string_at(0)
        return x + 1
'''
HANGING = '''import time

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Hang(nn.Module):
    def forward(self, x):
        time.sleep(3600)
        return x + 1
'''
LAYERS = """import torch
from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.erfinv(torch.sigmoid(self.fc(x)) - 0.5)
"""
MODEL = """import torch
from torch import nn

from layers import Block


# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x) + 1
"""


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=TIMEOUT)


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.stdout[-1000:], proc.stderr[-2000:])
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("torch-mlir-lens: error: ") and "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in line, line
    return line


def test_bad_paths_shards_and_settings_are_one_line_errors(tmp_path: Path) -> None:
    one_line_error(run("check", "nowhere/", cwd=tmp_path), "nowhere: no such file")
    one_line_error(run("check", "*.nothing", cwd=tmp_path), "no file matches")
    (tmp_path / "m.py").write_text(HEALTHY)
    one_line_error(run("check", "m.py", "--shard", "3/2", cwd=tmp_path), "--shard 3/2")
    one_line_error(run("check", "m.py", "--baseline", "none.json", cwd=tmp_path),
                   "none.json", "no such baseline")
    one_line_error(run("check", cwd=tmp_path), "no PATH given")
    (tmp_path / "pyproject.toml").write_text("[tool.torch-mlir-lens]\ntargets = ['spirv']\n")
    one_line_error(run("check", "m.py", cwd=tmp_path), "pyproject.toml", "'spirv'")


def test_unparsable_files_are_located_and_the_rest_is_still_listed(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text("import torch\n\nclass M(torch.nn.Module:\n")
    (tmp_path / "pkg" / "good.py").write_text(HEALTHY)
    listed = run("check", "pkg", "--list", cwd=tmp_path)
    assert listed.stdout.split() == ["pkg/good.py::Healthy"]
    assert listed.returncode == 2
    report = run("check", "pkg", "--module", "Nothing", cwd=tmp_path)
    one_line_error(report, "no module named 'Nothing'")


def test_crash_and_hang_stay_with_their_module_on_parallel_workers(tmp_path: Path) -> None:
    for name, text in (("a_crash.py", CRASHING), ("b_hang.py", HANGING),
                       ("c_healthy.py", HEALTHY), ("d_healthy.py", HEALTHY.replace(
                           "Healthy", "Other"))):
        (tmp_path / name).write_text(text)
    (tmp_path / "broken.py").write_text("def (:\n")
    (tmp_path / "layers.py").write_text(LAYERS)
    (tmp_path / "model.py").write_text(MODEL)
    proc = run("check", ".", "-j", "2", "--targets", "linalg", "--timeout", "20",
               "--memory-limit", "1500", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]  # the unparsable file
    data = json.loads(proc.stdout)
    by_name = {m["name"]: m for m in data["modules"]}
    assert list(by_name) == ["Crash", "Hang", "Healthy", "Other", "Block", "Model"]
    assert by_name["Crash"]["error"]["kind"] == "worker-crash"
    assert by_name["Hang"]["error"]["kind"] == "timeout"
    for ok in ("Healthy", "Other"):
        assert by_name[ok]["targets"]["linalg"]["ok"] is True and not by_name[ok]["findings"]
    assert [f["rule"] for f in by_name["Crash"]["findings"]] == ["worker-crash"]
    assert [(p["file"], p["line"], p["rule"]) for p in data["problems"]] == [
        ("broken.py", 1, "syntax-error")]
    # An op in a library file: reported there, for the module that uses it (and the block).
    (used,) = by_name["Model"]["findings"]
    assert (used["rule"], used["file"], used["module_file"]) == (
        "linalg/aten.erfinv", "layers.py", "model.py")
    assert used["line"] == LAYERS.splitlines().index(
        "        return torch.erfinv(torch.sigmoid(self.fc(x)) - 0.5)") + 1
    assert by_name["Block"]["inputs"] == "derived"
    assert data["summary"] == {"files": 7, "modules": 6, "skipped": 0, "failing": 4, "ok": 2,
                               "findings": 5, "new": 5, "baselined": 0, "problems": 1}


def test_inputs_named_on_the_command_line_check_one_module_through_the_same_gate(
        tmp_path: Path) -> None:
    """`check FILE --inputs EXPR` is a mode of the one check path: the named module (else the
    file's first) lowered with those inputs, reported as any other check; inputs that cannot
    be used are the command's bad input, at their line; they name one FILE."""
    (tmp_path / "m.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass A(nn.Module):\n"
        "    def forward(self, x):\n        return x * 2\n\n\n"
        "class B(nn.Module):\n    def forward(self, x):\n        return torch.erfinv(x)\n")
    proc = run("check", "m.py", "--module", "B", "--inputs", "(torch.randn(2, 3),)",
               "--targets", "tosa", "--json", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # erfinv: TOSA refuses it
    (entry,) = json.loads(proc.stdout)["modules"]
    assert (entry["name"], entry["inputs"]) == ("B", "given")
    assert entry["targets"]["tosa"]["unsupported"][0]["op"].endswith("aten.erfinv")
    first = run("check", "m.py", "--inputs", "(torch.randn(2, 3),)", "--targets", "linalg",
                cwd=tmp_path)
    assert first.returncode == 0 and "A (line 5): linalg ok" in first.stdout, first.stdout
    one_line_error(run("check", "m.py", "--inputs", "(torch.randn(2, 3)", cwd=tmp_path),
                   "m.py:", "--inputs expression", "was never closed")
    one_line_error(run("check", "m.py", "m.py", "--inputs", "(1,)", cwd=tmp_path),
                   "give one FILE")

"""`check` and `merge` against a hostile repository (docs/security.md): special files wherever
a path is read, a forged cache that would turn CI green, leftovers of killed writers, and a
pyproject.toml that names a file outside the repository. Each test is the attack that once
worked (an out-of-memory kill, a hang past SIGTERM, a green run of a failing module).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from torch_mlir_lens.system import disk_cache

TIMEOUT = 600
FAST_S = 20  # a refusal comes before any worker starts: well under this
NO_INPUTS = '''import torch


class {name}(torch.nn.Module):
    def forward(self, x):
        return x + 1
'''
ERFINV = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Gauss(nn.Module):
    def forward(self, x):
        return torch.erfinv(x * 0.5)
'''


def run(*args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_error(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout[-1000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("torch-mlir-lens: error: ")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def repository(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "m.py").write_text(NO_INPUTS.format(name="M"))
    return root


@pytest.mark.parametrize("named_in", ["command line", "pyproject"])
def test_a_baseline_linked_to_dev_zero_is_refused_at_once(tmp_path: Path, named_in: str) -> None:
    """Finding 6: a committed baseline that is a symlink to /dev/zero made `check` read 23.8 GB
    until the OOM killer ended it."""
    repo = repository(tmp_path / "repo")
    (repo / "base.json").symlink_to("/dev/zero")
    args = ["check", "m.py"]
    if named_in == "pyproject":
        (repo / "pyproject.toml").write_text('[tool.torch-mlir-lens]\nbaseline = "base.json"\n')
    else:
        args += ["--baseline", "base.json"]
    started = time.monotonic()
    line = one_error(run(*args, cwd=repo, timeout=FAST_S * 3))
    assert time.monotonic() - started < FAST_S
    # From pyproject.toml the link is refused for leaving the repository, before any read.
    assert ("not a regular file (a character device)" in line
            or (named_in == "pyproject" and "is outside the project" in line)), line


def test_a_fifo_baseline_or_report_never_hangs(tmp_path: Path) -> None:
    """Finding 6: a FIFO baseline hung `check` past SIGTERM; `merge` of a FIFO (the CI report
    job merges `lens-*.json` from the checkout) hung or ran out of memory with /dev/zero."""
    repo = repository(tmp_path / "repo")
    os.mkfifo(repo / "base.json")
    os.mkfifo(repo / "lens-1.json")
    (repo / "lens-2.json").symlink_to("/dev/zero")
    for args in (["check", "m.py", "--baseline", "base.json"],
                 ["merge", "lens-1.json", "lens-2.json"], ["merge", "lens-2.json"]):
        started = time.monotonic()
        line = one_error(run(*args, cwd=repo, timeout=FAST_S * 3))
        assert time.monotonic() - started < FAST_S
        assert "not a regular file" in line, line


def test_a_pyproject_cannot_send_the_baseline_outside_the_repository(tmp_path: Path) -> None:
    """Finding 8: a repository's pyproject.toml made `--write-baseline` create a file outside
    the repository."""
    repo = repository(tmp_path / "repo")
    (repo / "pyproject.toml").write_text(
        '[tool.torch-mlir-lens]\nbaseline = "../outside/base.json"\n')
    (tmp_path / "outside").mkdir()
    line = one_error(run("check", "m.py", "--write-baseline", cwd=repo, timeout=FAST_S * 3))
    assert "baseline: '../outside/base.json' is outside the project" in line, line
    assert not (tmp_path / "outside" / "base.json").exists()
    (repo / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    (repo / "pyproject.toml").write_text('[tool.torch-mlir-lens]\nbaseline = "link/b.json"\n')
    line = one_error(run("check", "m.py", "--write-baseline", cwd=repo, timeout=FAST_S * 3))
    assert "is outside the project" in line, line  # through a link, too
    assert not list((tmp_path / "outside").iterdir())


def test_write_baseline_sweeps_what_a_killed_writer_left(tmp_path: Path) -> None:
    """Finding 8: SIGKILL during `--write-baseline` left `*.tmp` files for ever."""
    repo = repository(tmp_path / "repo")
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()  # a pid that no process has now
    stale = repo / f".torch-mlir-lens-baseline.json.{dead.pid}.0.tmp"
    stale.write_text("half a baseline")
    os.utime(stale, (time.time() - 60, time.time() - 60))
    proc = run("check", "m.py", "--write-baseline", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "torch-mlir-lens-baseline.json").exists()
    assert not stale.exists()


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.json.z"))


def test_a_forged_cache_entry_never_turns_ci_green(tmp_path: Path) -> None:
    """Finding 3: the documented CI workflow keeps the cache in the checkout, so a pull
    request can commit entries; one rewritten to `ok: true`, no diagnostics and fake IR made
    `check` exit 0 for a module that does not lower. Forged entries are misses now: the run
    lowers again, fails as it should and replaces them."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "gauss.py").write_text(ERFINV)
    env = {"TORCH_MLIR_LENS_CACHE_DIR": str(repo / ".lens-cache")}
    first = run("check", "gauss.py", "--targets", "tosa", "--format", "json", cwd=repo, env=env)
    assert first.returncode == 1, first.stderr  # erfinv: TOSA refuses it
    entries = [p for p in _entries(repo / ".lens-cache") if "blocks" not in p.parts]
    assert entries
    for entry in entries:  # the pull request's forgery: the layout copied, the tag unknown
        blob = entry.read_bytes()[len(disk_cache._MAGIC) + 32:]
        data = json.loads(zlib.decompress(blob))
        for result in data["reply"].get("results", []):
            result.update(ok=True, diagnostics=[], ir="func.func @main() { return }",
                          partial=False)
        entry.write_bytes(disk_cache._MAGIC + b"\0" * 32
                          + zlib.compress(json.dumps(data).encode()))
    again = run("check", "gauss.py", "--targets", "tosa", "--format", "json", cwd=repo, env=env)
    assert again.returncode == 1, again.stdout[-2000:]
    report = json.loads(again.stdout)
    assert report["modules"][0]["targets"]["tosa"]["ok"] is False


def test_check_ends_on_sigterm_while_reading_nothing_special(tmp_path: Path) -> None:
    """A check that reads its inputs ends on SIGTERM promptly (the reads never block)."""
    repo = repository(tmp_path / "repo")
    os.mkfifo(repo / "pyproject.toml")  # a FIFO where the configuration is looked for
    proc = subprocess.Popen([sys.executable, "-m", "torch_mlir_lens", "check", "m.py"],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        _out, err = proc.communicate(timeout=FAST_S * 3)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
        pytest.fail("check hung on a FIFO pyproject.toml")
    assert "Traceback" not in err


def test_a_shared_parent_gitignore_hides_nothing(tmp_path: Path) -> None:
    """Finding 8 of the probe: with no repository, a `.gitignore` in a shared parent folder
    (`*.py`) made `check .` find 0 modules and pass."""
    shared = tmp_path / "shared"
    project = shared / "alice" / "proj"
    project.mkdir(parents=True)
    (project / "m.py").write_text(NO_INPUTS.format(name="M"))
    (shared / ".gitignore").write_text("*.py\n")
    proc = run("check", ".", "--list", cwd=project, timeout=FAST_S * 3)
    assert proc.returncode == 0, proc.stderr
    assert "m.py::M" in proc.stdout, proc.stdout

"""The exit codes are one table, and the command keeps it.

The table of `rules/exit_codes.py` must be what `--help` prints and what the README and
docs/ci.md show, row for row. Then the real command runs once for each code and must return
it: a `check` that passes (0), one where a module does not lower next to one that crashes the
worker (1: a failure to lower comes before a crash), a file that does not parse (2), a module
that crashes the worker alone, in a repository check and in a one-module check (3), and a
check ended by SIGTERM while its job runs (128 + 15). The runs start together, so their
workers import torch side by side.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from torch_mlir_lens.rules.exit_codes import EXIT_CODES, SIGNAL_BASE

ROOT = Path(__file__).resolve().parents[2]
RUN_S = 600  # several workers import torch at once on a busy machine
JOB_TIMEOUT = "240"

HEALTHY = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Healthy(nn.Module):
    def forward(self, x):
        return torch.relu(x + 1)
'''
ERFINV = '''import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class InverseErf(nn.Module):
    def forward(self, x):
        return torch.erfinv(x * 0.5)
'''
CRASH = '''import os

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Crash(nn.Module):
    def forward(self, x):
        os._exit(3)
'''
# Says when its job runs (the command is then inside its signal handling), then waits.
HANG = '''import pathlib
import time

import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Hang(nn.Module):
    def forward(self, x):
        (pathlib.Path(__file__).parent / "running").write_text("x")
        time.sleep(600)
        return x
'''
# What each run checks: its files and its command line after `check`.
RUNS: dict[str, tuple[dict[str, str], list[str]]] = {
    "ok": ({"healthy.py": HEALTHY}, ["."]),
    "does-not-lower": ({"a_crash.py": CRASH, "b_erfinv.py": ERFINV}, ["."]),
    "bad-input": ({"broken.py": "def (:\n"}, ["."]),
    "crash": ({"a_crash.py": CRASH, "b_healthy.py": HEALTHY}, ["."]),
    "crash-one-module": ({"crash.py": CRASH}, ["crash.py", "--module", "Crash", "--inputs",
                                               "(torch.randn(2, 4),)"]),
    "SIGTERM": ({"hang.py": HANG}, ["hang.py", "--timeout", "600"]),
}
EXPECTED = {"ok": "0", "does-not-lower": "1", "bad-input": "2", "crash": "3",
            "crash-one-module": "3", "SIGTERM": "128+N"}


def markdown_table(path: Path) -> list[tuple[str, str]]:
    """The rows of the `| code | meaning |` table of a page."""
    text = path.read_text(encoding="utf-8")
    head = text.index("| code | meaning |")
    rows = []
    for line in text[head:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        code, meaning = (cell.strip() for cell in line.strip().strip("|").split("|"))
        rows.append((code, meaning))
    return rows


def help_table() -> list[tuple[str, str]]:
    """The `exit codes:` epilog of the real command's `--help`, its wrapped lines joined."""
    proc = subprocess.run([sys.executable, "-m", "torch_mlir_lens", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\nexit codes:\n", 1)[1].splitlines()
    rows: list[list[str]] = []
    for line in lines:
        entry = re.match(r"^  (\S+)\s+(.*)$", line)
        if entry and not line.startswith("   "):
            rows.append([entry.group(1), entry.group(2)])
        elif line.strip():
            rows[-1][1] += " " + line.strip()
    return [(code, meaning) for code, meaning in rows]


def test_one_table_in_the_code_the_help_the_readme_and_the_ci_page() -> None:
    table = list(EXIT_CODES)
    assert [code for code, _ in table] == ["0", "1", "2", "3", "128+N"]
    assert help_table() == table
    assert markdown_table(ROOT / "README.md") == table
    assert markdown_table(ROOT / "docs" / "ci.md") == table


@dataclass
class Run:
    """One `check` process and the folder it runs in."""

    proc: subprocess.Popen[str]
    folder: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    root = tmp_path_factory.mktemp("exit-codes")
    started: dict[str, Run] = {}
    for name, (files, args) in RUNS.items():
        folder = root / name
        folder.mkdir()
        for file, text in files.items():
            (folder / file).write_text(text)
        command = ["check", *args, "--targets", "linalg", "--format", "json", "-j", "1",
                   "--rewrites", "off"]  # the exit code is the subject: no proofs
        if "--timeout" not in command:
            command += ["--timeout", JOB_TIMEOUT]
        proc = subprocess.Popen(
            [sys.executable, "-m", "torch_mlir_lens", *command], cwd=folder,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)  # only the signal the test sends reaches it
        started[name] = Run(proc, folder)
    try:
        yield started
    finally:  # a failed test leaves no command or worker running
        for run in started.values():
            family = _family(run.proc.pid)
            if run.proc.poll() is None:
                run.proc.kill()
            run.proc.communicate(timeout=60)
            for p in family:
                with contextlib.suppress(psutil.Error):
                    p.kill()


def _family(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _code(row: str) -> int:
    """A row's code as the command returns it (`128+N` for the SIGTERM this test sends)."""
    return SIGNAL_BASE + signal.SIGTERM.value if row == "128+N" else int(row)


def test_each_code_is_what_the_command_returns(runs: dict[str, Run]) -> None:
    table = dict(markdown_table(ROOT / "README.md"))
    hang = runs["SIGTERM"]
    running = hang.folder / "running"
    deadline = time.monotonic() + RUN_S
    while not running.exists():  # its job runs: the command handles signals by now
        assert hang.proc.poll() is None, hang.proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the hanging module's job never started"
        time.sleep(0.2)
    hang.proc.send_signal(signal.SIGTERM)
    for name, run in runs.items():
        out, err = run.proc.communicate(timeout=RUN_S)
        row = EXPECTED[name]
        assert row in table, row
        assert run.proc.returncode == _code(row), (name, run.proc.returncode, err[-2000:])
        assert "Traceback" not in err, err[-2000:]
        if name == "SIGTERM":
            assert not out  # a signal writes no report
        elif name != "crash-one-module":  # (a one-module check's listing has no code)
            assert json.loads(out)["exit_code"] == run.proc.returncode, name

"""However a `check` run ends, its workers and everything they started end with it.

`check` (and once `lower`) runs on a module whose forward starts a child process and then
hangs. Each way a run
can end is then applied to its own run: SIGTERM (`timeout`, CI cancellation), SIGHUP (a closed
terminal), SIGINT (Ctrl-C), SIGKILL (the CLI dies without any clean-up: the workers end
themselves), and the module's own time-out. Afterwards the process table must hold none of
the run's processes: not the worker, not the child of the module. The runs start together
(their workers import torch side by side) and each test ends one of them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from . import procs

HANGING = '''import subprocess
import sys
import time

import torch
from torch import nn

MARK = {mark!r}


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class Hang(nn.Module):
    def forward(self, x):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARK])
        time.sleep(600)
        return x + 1
'''
CASES = ("SIGTERM", "SIGHUP", "SIGINT", "SIGKILL", "timeout", "lower-SIGTERM")
TIME_OUT_S = 6  # the `timeout` case's --timeout; the others' is far longer than the test
START_S = 240  # the five workers import torch and start their job side by side
PARENT_ENV = "TORCH_MLIR_LENS_PARENT_PID"  # every worker of a CLI, and what they start, have it


@dataclass
class Run:
    """One `check` process, the marker its module's child carries, its report file (the
    baseline, when it writes one, is beside it)."""

    proc: subprocess.Popen[str]
    mark: str
    report: Path

    def left(self) -> set[int]:
        """The run's processes still alive: its workers and everything they started (they
        inherit the worker's environment), and the module's child wherever it went."""
        found = set(procs.marked(self.mark))
        for p in psutil.process_iter(["cmdline"]):
            try:
                if "python" in " ".join(p.info["cmdline"] or []) and p.environ().get(
                        PARENT_ENV) == str(self.proc.pid) and procs.alive(p.pid):
                    found.add(p.pid)
            except psutil.Error:
                continue
        return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    root = tmp_path_factory.mktemp("signals")
    started: dict[str, Run] = {}
    for case in CASES:
        folder = root / case
        folder.mkdir()
        mark = f"{folder}/hanging-child"
        (folder / "hang.py").write_text(HANGING.format(mark=mark))
        # A run the time-out ends completes (exit 3: its one job could not run); the others
        # must write no baseline.
        extra = ["--timeout", str(TIME_OUT_S)] if case == "timeout" else [
            "--timeout", "3600", "--write-baseline", "--baseline", "base.json"]
        command = ["check", "hang.py", "-j", "1", "--targets", "linalg", "--format", "json",
                   "-o", "report.json", *extra]
        if case == "lower-SIGTERM":  # the other commands that run a worker end alike
            command = ["lower", "hang.py", "--module", "Hang", "--target", "linalg"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "torch_mlir_lens", *command],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)  # only the signal a test sends reaches it
        started[case] = Run(proc, mark, folder / "report.json")
    try:
        for case, run in started.items():
            if case != "timeout":  # that one may time out before it is seen
                procs.wait_until(lambda r=run: procs.marked(r.mark), START_S,
                                 "the module's child (the worker is in the hanging job)")
                assert run.left() > set(procs.marked(run.mark)), "no worker found"
        yield started
    finally:
        for run in started.values():
            if run.proc.poll() is None:
                run.proc.kill()
            run.proc.communicate(timeout=30)
            procs.kill_all(run.left())


def _assert_nothing_left(run: Run) -> None:
    try:
        procs.wait_until(lambda: not run.left(), 15, "the run's processes to end")
    except procs.WaitTimeout:
        raise AssertionError(f"left behind:\n{procs.describe(run.left())}") from None


def test_a_timed_out_module_leaves_no_process(runs: dict[str, Run]) -> None:
    run = runs["timeout"]
    _, err = run.proc.communicate(timeout=START_S)
    assert run.proc.returncode == 3, err[-2000:]  # could not run, and nothing else failed
    (module,) = json.loads(run.report.read_text())["modules"]
    # Stopped in the sleep, after the child was started.
    sleep_line = HANGING.splitlines().index("        time.sleep(600)") + 1
    assert (module["error"]["kind"], module["error"]["line"]) == ("timeout", sleep_line)
    _assert_nothing_left(run)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT", "lower-SIGTERM"])
def test_a_signal_ends_the_workers_and_writes_nothing(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    sig = signal.Signals[name.rpartition("-")[2]]
    run.proc.send_signal(sig)
    _, err = run.proc.communicate(timeout=60)
    assert run.proc.returncode == 128 + sig.value, err[-2000:]
    assert err.strip().splitlines()[-1] == (
        f"torch-mlir-lens: error: stopped by {sig.name}: its workers were ended, nothing was "
        "written"), err[-2000:]
    assert "Traceback" not in err
    assert not run.report.exists() and not (run.report.parent / "base.json").exists()
    _assert_nothing_left(run)


def test_workers_end_themselves_when_the_cli_is_killed(runs: dict[str, Run]) -> None:
    run = runs["SIGKILL"]
    run.proc.kill()
    run.proc.communicate(timeout=60)
    assert run.proc.returncode == -signal.SIGKILL
    _assert_nothing_left(run)

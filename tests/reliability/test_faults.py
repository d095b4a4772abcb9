"""Hostile modules through the real server over LSP: each one must leave the server answering,
get a diagnostic of the right kind, let the next healthy module lower, and leave no process.

One server serves the whole file (like an editor session that meets one bad module after
another); each test opens one hostile file and checks the four promises.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from lsprotocol import types

from . import procs
from .checks import assert_healthy, cleanup, finish, make_workspace
from .session import LensSession

TIMEOUT_S = 8  # the server's timeoutSeconds here: short, so the hang tests are fast
MEMORY_MB = 1500


@dataclass
class Bench:
    """The shared session, its healthy reference module and a supply of fresh healthy files."""

    session: LensSession
    ws: Path
    healthy_uri: str
    healthy_line: int  # 0-based line of `y = self.fc(x)` in Healthy.forward
    counter: Iterator[int]

    def hover_healthy(self, timeout: float = 60) -> str:
        """Hover the cached healthy line; return the markdown (asserting there is some)."""
        hover = self.session.hover(self.healthy_uri, self.healthy_line, 8, timeout=timeout)
        assert hover is not None, "hover on a lowered healthy line returned nothing"
        value = hover.contents.value if hasattr(hover.contents, "value") else str(hover.contents)
        assert "mlir" in value, f"hover without IR: {value[:300]}"
        return value

    def lower_fresh_healthy(self) -> None:
        """Lower a module never seen before (no cache can answer): it must succeed."""
        k = next(self.counter)
        path = self.ws / f"fresh_{k}.py"
        path.write_text(
            "import torch\nfrom torch import nn\n\n\n"
            f"# torch-mlir-lens: inputs=(torch.randn(2, {k}),)\n"
            f"class Fresh{k}(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            f"        self.fc = nn.Linear({k}, 3)\n\n"
            "    def forward(self, x):\n"
            "        return torch.relu(self.fc(x))\n"
        )
        uri = self.session.open(path)
        result = self.session.lower(uri, f"Fresh{k}", "linalg", timeout=120)
        assert result["ok"], f"healthy module failed after the fault: {result.get('diagnostics')}"
        assert "linalg" in result["ir"] or "arith" in result["ir"], result["ir"][:500]
        self.session.close_doc(uri)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    root = tmp_path_factory.mktemp("faults")
    ws = make_workspace(root)
    systmp = root / "systmp"
    systmp.mkdir()
    session = LensSession(
        ws,
        trusted=True,
        tmpdir=systmp,
        settings={
            "timeoutSeconds": TIMEOUT_S,
            "memoryLimitMb": MEMORY_MB,
            "diagnostics": "onSave",
            "lensTargets": ["linalg", "tosa"],
        },
    )
    try:
        session.start()
        healthy = ws / "healthy.py"
        uri = session.open(healthy)
        line = healthy.read_text().splitlines().index("        y = self.fc(x)")
        result = session.lower(uri, "Healthy", "linalg", timeout=180)
        assert result["ok"], result.get("diagnostics")
        bench = Bench(session, ws, uri, line, itertools.count(3))
        bench.hover_healthy()
        yield bench
    finally:
        cleanup(session, marker=str(ws))


@dataclass
class Fault:
    """A hostile file and what its diagnostic must say."""

    file: str
    cls: str
    expect: Callable[[list[types.Diagnostic]], bool]
    description: str
    timeout: float = 60
    # The server's time-out while this fault runs, when the session's short one would race
    # the verdict under test (a loaded machine takes seconds to touch 1.5 GB).
    server_timeout_s: float = TIMEOUT_S


def has_kind(*kinds: str, text: str | None = None) -> Callable[[list[types.Diagnostic]], bool]:
    """Some diagnostic's code is one of `kinds` (and its message matches `text`, if given)."""

    def check(diags: list[types.Diagnostic]) -> bool:
        return any(
            str(d.code) in kinds and (text is None or re.search(text, d.message, re.I))
            for d in diags
        )

    return check


def lowered_cleanly(diags: list[types.Diagnostic]) -> bool:
    """A module that misbehaves only on the side (prints, threads) still lowers: its check
    finished without an error (an empty list is the published verdict of a clean check)."""
    return not any(d.severity == types.DiagnosticSeverity.Error for d in diags)


CRASH = has_kind("worker-crash")
HANG = has_kind("timeout")
MEMORY = has_kind("memory-limit")
FAULTS = [
    Fault("segfault.py", "Segfault", CRASH, "SIGSEGV in forward"),
    Fault("hard_exit.py", "HardExit", CRASH, "os._exit(3) in __init__"),
    Fault("hang_init.py", "HangInit", HANG, "endless loop in __init__"),
    Fault("hang_forward.py", "HangForward", HANG, "endless loop in forward"),
    Fault("memory_hog.py", "MemoryHog", MEMORY, "6 GiB touched vs 1500 MB", server_timeout_s=120),
    Fault(
        "recursion.py",
        "Recursion",
        lambda d: has_kind("export-error", "lowering-error", text="recursion")(d) or CRASH(d),
        "unbounded recursion in forward",
    ),
    Fault("flood_stdout.py", "FloodStdout", lowered_cleanly, "100 MB to stdout"),
    Fault("flood_stderr.py", "FloodStderr", lowered_cleanly, "100 MB to stderr"),
]


def open_and_wait(bench: Bench, fault: Fault) -> list[types.Diagnostic]:
    """Open the hostile file (diagnostics on open lower it) and hover the healthy module
    meanwhile; return the hostile file's diagnostics.

    Modules that misbehave only on the side (prints, threads, children) must still lower:
    for them the verdict is a `torchMlirLens/lower` that succeeds.
    """
    session = bench.session
    path = bench.ws / fault.file
    uri = path.as_uri()
    session.client.diagnostics.pop(uri, None)
    session.open(path)
    bench.hover_healthy()  # a cached hover does not wait for a job that misbehaves:
    if fault.expect is lowered_cleanly:
        result = session.lower(uri, fault.cls, "linalg",
                               timeout=fault.server_timeout_s + fault.timeout)
        assert result["ok"], f"{fault.description}: {result.get('diagnostics')}"
        return session.diagnostics(uri)
    if "hang" in fault.file:
        # ... it answered while the hang was still going on (not after the time-out).
        assert not fault.expect(session.diagnostics(uri)), "the hover waited for the hang"
    return session.wait_diagnostics(
        uri, fault.expect, fault.server_timeout_s + fault.timeout,
        f"diagnostics for {fault.description}",
    )


def effective_timeout(session: LensSession) -> float:
    """The server's time-out now (not waiting for a worker that is warming up)."""
    info = session.request("torchMlirLens/serverInfo", {"waitForWorker": False})
    return float(info["settings"]["timeoutSeconds"])


@contextlib.contextmanager
def server_timeout(session: LensSession, seconds: float) -> Iterator[None]:
    """Run with the server's time-out at `seconds`, then back at TIMEOUT_S (each change
    waited for: settings are pulled asynchronously)."""

    def apply(value: float) -> None:
        session.set_settings(timeoutSeconds=value)
        procs.wait_until(lambda: effective_timeout(session) == value,
                         30, f"the server's time-out at {value} s")

    if seconds == TIMEOUT_S:
        yield
        return
    apply(seconds)
    try:
        yield
    finally:
        apply(TIMEOUT_S)


def on_class_line(bench: Bench, fault: Fault, diags: list[types.Diagnostic]) -> None:
    lines = (bench.ws / fault.file).read_text().splitlines()
    class_line = next(i for i, t in enumerate(lines) if t.startswith(f"class {fault.cls}("))
    hits = [d for d in diags if fault.expect([d])]
    assert any(d.range.start.line == class_line for d in hits), (
        f"the {fault.description} diagnostic is not on the class name (line {class_line}): "
        f"{[(d.range.start.line, d.code) for d in hits]}"
    )


@pytest.mark.parametrize("fault", FAULTS, ids=[f.file.removesuffix(".py") for f in FAULTS])
def test_hostile_module(bench: Bench, fault: Fault) -> None:
    session = bench.session
    before = session.sample_processes()

    with server_timeout(session, fault.server_timeout_s):
        diags = open_and_wait(bench, fault)

    if fault.expect in (CRASH, HANG, MEMORY):  # worker failures sit on the class name
        on_class_line(bench, fault, diags)
    bench.hover_healthy()
    bench.lower_fresh_healthy()
    procs.wait_until(
        lambda: len(session.sample_processes()) <= len(before),
        20, f"process count back to {len(before)} (server's descendants)",
    )
    assert not procs.marked(str(bench.ws))
    assert_healthy(session)
    session.close_doc((bench.ws / fault.file).as_uri())


FLOOD_LOG = """import os
import sys

import torch
from torch import nn

LINE = "z" * (2**20 - 1) + "\\n"


# torch-mlir-lens: inputs=(torch.randn(2, 4),)
class FloodLog(nn.Module):
    def __init__(self):
        super().__init__()
        for _ in range(50):
            print(LINE, end="")
            sys.stderr.write(LINE)
        for _ in range(50):
            os.write(1, LINE.encode())
            os.write(2, LINE.encode())
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
"""


def test_flood_did_not_reach_protocol(bench: Bench) -> None:
    """200 MB of user prints (stdout and stderr, through Python and straight to the fds, in a
    file of its own so no cache answers) do not become LSP traffic: the window/logMessage
    text they cause stays under 2 MB."""
    session = bench.session
    path = bench.ws / "flood_log.py"
    path.write_text(FLOOD_LOG)
    before = sum(len(m.message) for m in session.client.log_messages)
    uri = session.open(path)
    assert session.lower(uri, "FloodLog", "linalg", timeout=120)["ok"]
    session.barrier()
    logged = sum(len(m.message) for m in session.client.log_messages) - before
    assert logged < 2 * 2**20, f"{logged} bytes of window/logMessage for 200 MB of prints"
    session.close_doc(uri)
    assert_healthy(session)


def test_stray_children_are_reaped(bench: Bench) -> None:
    """Child processes a constructor starts (a child and an orphaned grandchild) do not outlive
    the lowering that started them."""
    session = bench.session
    fault = Fault("stray_children.py", "StrayChildren", lowered_cleanly, "stray children")
    before = session.sample_processes()
    open_and_wait(bench, fault)
    bench.lower_fresh_healthy()
    try:
        procs.wait_until(lambda: not procs.marked(str(bench.ws)), 20, "stray children to end")
    except procs.WaitTimeout:
        left = set(procs.marked(str(bench.ws)))
        procs.kill_all(left)  # do not let them spoil the next tests
        raise AssertionError(f"children outlived the call:\n{procs.describe(left)}") from None
    procs.wait_until(lambda: len(session.sample_processes()) <= len(before), 20, "process count")
    assert_healthy(session)


def test_escaping_child_is_reaped(bench: Bench) -> None:
    """A child in its own session (setsid) escapes a process-group kill: still must not survive."""
    session = bench.session
    fault = Fault("escaping_child.py", "EscapingChild", lowered_cleanly, "setsid child")
    open_and_wait(bench, fault)
    bench.lower_fresh_healthy()
    try:
        procs.wait_until(lambda: not procs.marked(str(bench.ws)), 20, "escaped child to end")
    except procs.WaitTimeout:
        left = set(procs.marked(str(bench.ws)))
        procs.kill_all(left)
        raise AssertionError(f"a setsid child outlived the call:\n{procs.describe(left)}") from None
    assert_healthy(session)


def test_stray_thread_ends(bench: Bench) -> None:
    """A non-daemon thread that never ends: the module lowers, the server answers, and the
    thread does not keep running after the lowering (its heartbeat file stops changing)."""
    session = bench.session
    fault = Fault("stray_threads.py", "StrayThreads", lowered_cleanly, "stray thread")
    open_and_wait(bench, fault)
    bench.lower_fresh_healthy()
    beat = bench.ws / "thread_heartbeat.txt"
    assert beat.exists(), "the hostile thread never ran (the test proves nothing)"

    def still_beating() -> bool:
        first = beat.read_text()
        return procs.wait_or_false(lambda: beat.read_text() != first, 1.0)

    procs.wait_until(lambda: not still_beating(), 20, "the stray thread to stop")
    assert_healthy(session)


def test_global_state_does_not_leak(bench: Bench) -> None:
    """cwd, sys.path and a monkeypatched torch (export, Linear, relu) do not break the next
    module: one that imports a sibling file and uses Linear + relu lowers, with real IR."""
    session = bench.session
    fault = Fault(
        "global_state.py", "GlobalState", lambda d: True, "cwd / sys.path / torch patched"
    )
    open_and_wait(bench, fault)
    uri = session.open(bench.ws / "healthy_sibling.py")
    result = session.lower(uri, "HealthySibling", "linalg", timeout=120)
    assert result["ok"], f"lowering after global-state sabotage failed: {result['diagnostics']}"
    assert "linalg.matmul" in result["ir"] or "linalg.generic" in result["ir"], result["ir"][:400]
    bench.hover_healthy()
    assert_healthy(session)


def test_patched_stdlib_does_not_leak(bench: Bench) -> None:
    """A module that breaks os.replace / os.rename / shutil.move / tempfile.mkstemp for the
    process: the next export of a healthy module (an atomic write needs them) still works."""
    session = bench.session
    uri = session.open(bench.ws / "patch_stdlib.py")
    session.lower(uri, "PatchStdlib", "linalg", timeout=120)  # arms the sabotage
    out = bench.ws / "out_stdlib"
    out.mkdir()
    reply = session.execute("torchMlirLens.exportModule", [{
        "uri": bench.healthy_uri, "module": "Healthy", "target": "linalg",
        "output": str(out / "healthy.mlir")}])
    assert (out / "healthy.mlir").exists(), reply
    session.close_doc(uri)
    assert_healthy(session)


def worker_pid(session: LensSession) -> int:
    info = session.request("torchMlirLens/serverInfo", {"waitForWorker": True}, 120)
    pid = info["engine"]["workerPid"]
    assert isinstance(pid, int), info
    return pid


def test_worker_killed_from_outside(bench: Bench) -> None:
    """The OOM killer (or a user) SIGKILLs the idle worker: the next request gets a new one.

    The test waits until the server has reaped the dead worker, as a user would; a job sent
    before the reaping is covered by test_worker_client.py (finding 5 in docs/reliability.md).
    """
    session = bench.session
    before = session.sample_processes()
    pid = worker_pid(session)
    os.kill(pid, signal.SIGKILL)
    procs.wait_until(lambda: not psutil.pid_exists(pid), 10, "the server to reap the worker")
    bench.hover_healthy()
    bench.lower_fresh_healthy()
    assert worker_pid(session) != pid
    procs.wait_until(lambda: len(session.sample_processes()) <= len(before), 20, "process count")
    assert_healthy(session)


def test_worker_frozen(bench: Bench) -> None:
    """A worker that stops responding (SIGSTOP) is caught by the time-out and replaced."""
    session = bench.session
    pid = worker_pid(session)
    os.kill(pid, signal.SIGSTOP)
    try:
        k = next(bench.counter)
        path = bench.ws / f"frozen_{k}.py"
        path.write_text((bench.ws / "healthy.py").read_text().replace("Linear(8, 4)",
                                                                      f"Linear(8, {k})"))
        uri = session.open(path)
        result = session.lower(uri, "Healthy", "linalg", timeout=TIMEOUT_S + 60)
        kinds = {d.get("kind") for d in result.get("diagnostics", [])}
        assert result["ok"] or "timeout" in kinds, result
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    procs.wait_until(lambda: not procs.alive(pid), 20, "the frozen worker to be killed")
    bench.lower_fresh_healthy()
    assert_healthy(session)


def test_session_ends_cleanly_after_all_faults(bench: Bench) -> None:
    """After every fault above: the server's own memory is bounded (the floods did not pile
    up in it), and shutdown + exit ends the server and every worker it ran."""
    assert_healthy(bench.session)
    rss = procs.rss_mb(bench.session.pid)
    assert rss < 400, f"server RSS {rss:.0f} MB after the faults"
    finish(bench.session, marker=str(bench.ws))
    assert bench.session.returncode == 0

"""The Engine with a real worker: caching, faults, cancellation, no leftover processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from tests.harness.waiting import async_wait_until

from torch_mlir_lens.engine import Engine, EngineConfig, ModuleJob
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.system.procs import family_pids

MODELS = Path(__file__).resolve().parents[1] / "models"
FAULTY = str(MODELS / "faulty.py")


def job(module: str, path: str = FAULTY, **kw: Any) -> ModuleJob:
    return ModuleJob(path=path, module=module, **kw)


async def lower_healthy(engine: Engine) -> None:
    (res,) = await engine.lower(job("Healthy"), targets=["linalg"])
    assert res.ok, res.diagnostics
    assert "linalg" in res.ir


async def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.05) -> None:
    """Poll `predicate` until it holds (the harness's waiting, with its time-out message)."""
    await async_wait_until(predicate, timeout, getattr(predicate, "__name__", "condition"),
                           interval)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def test_cache_second_lower_runs_no_job_and_targets_share_one_export(
    engine: Engine,
) -> None:
    first = await engine.lower(job("Healthy"), targets=["linalg"])
    stats = await engine.stats()
    again = await engine.lower(job("Healthy"), targets=["linalg"])
    assert (await engine.stats()).worker.jobs_run == stats.worker.jobs_run
    assert again[0].ir == first[0].ir
    # Another target: a new job, but the exported program is reused.
    (tosa,) = await engine.lower(job("Healthy"), targets=["tosa"])
    after = await engine.stats()
    assert tosa.ok and "tosa." in tosa.ir
    assert after.worker.jobs_run == stats.worker.jobs_run + 1
    assert after.worker.exports_run == stats.worker.exports_run
    # Several targets in one job: one export, results in the asked order.
    # (A new top-level statement: it counts for every module's fingerprint, a blank line not.)
    results = await engine.lower(job("Healthy", text=Path(FAULTY).read_text() + "_NEW = 1\n"),
                                 targets=["torch", "linalg", "stablehlo"])
    assert [r.target for r in results] == ["torch", "linalg", "stablehlo"]
    assert (await engine.stats()).worker.exports_run == after.worker.exports_run + 1


async def test_identical_concurrent_requests_share_one_job(engine: Engine) -> None:
    before = (await engine.stats()).worker.jobs_run
    a, b, c = await asyncio.gather(*(engine.lower(job("Healthy"), targets=["torch"])
                                     for _ in range(3)))
    assert a[0].ir == b[0].ir == c[0].ir
    assert (await engine.stats()).worker.jobs_run == before + 1


async def test_invalidate_and_text_change_rerun(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(Path(FAULTY).read_text())
    await engine.lower(job("Healthy", path=str(path)), targets=["torch"])
    before = (await engine.stats()).worker.jobs_run
    engine.invalidate(str(path))
    await engine.lower(job("Healthy", path=str(path)), targets=["torch"])
    assert (await engine.stats()).worker.jobs_run == before + 1
    # Text changed on disk: a different key without any invalidate call.
    path.write_text(path.read_text().replace("nn.Linear(4, 3)", "nn.Linear(4, 5)"))
    (res,) = await engine.lower(job("Healthy", path=str(path)), targets=["torch"])
    assert "2,5" in res.ir.replace(" ", "")


@pytest.mark.parametrize(
    ("module", "kind", "needle"),
    [
        ("Segfault", "worker-crash", "SIGSEGV"),
        ("HardExit", "worker-crash", "exit code 3"),
        ("HangInit", "timeout", "longer than"),
        ("HangForward", "timeout", "longer than"),
        ("MemoryHog", "memory-limit", "memory"),
    ],
)
async def test_fault_gives_its_kind_then_next_job_succeeds(
    module: str, kind: str, needle: str,
) -> None:
    # Only the hangs need the short time-out; for the others it must never win the race (a
    # fresh clone's loaded machine once made the memory hog's job outlast 8 s).
    timeout_s = 8 if kind == "timeout" else 60
    engine = Engine(EngineConfig(python=sys.executable, timeout_s=timeout_s,
                                 memory_limit_mb=1500))
    await engine.start()
    try:
        await engine.wait_ready()
        pid = engine.worker_pid
        assert pid is not None
        with pytest.raises(LensError) as info:
            await engine.lower(job(module), targets=["linalg"])
        assert info.value.kind == kind, info.value.message
        assert needle in info.value.message
        if module in ("Segfault", "HangForward"):
            # faulthandler's stack names the user's line.
            assert info.value.file == FAULTY and info.value.line, info.value.message
        if kind == "timeout":
            # The stack names the phase that took the time, not "the lowering" whatever it was.
            assert not info.value.message.startswith("the lowering"), info.value.message
        assert family_pids(pid) == [], "the old worker (or a child) is still alive"
        await lower_healthy(engine)
        assert engine.restarts == 1
        # The failure is remembered for this text: no second crash/hang on a re-hover.
        with pytest.raises(LensError):
            await engine.lower(job(module), targets=["linalg"])
        assert engine.restarts == 1
    finally:
        await engine.stop()


async def test_loud_module_does_not_corrupt_the_channel(engine: Engine) -> None:
    (res,) = await engine.lower(job("Loud"), targets=["linalg"])
    assert res.ok, res.diagnostics
    await lower_healthy(engine)
    assert engine.restarts == 0


async def test_children_do_not_outlive_the_job(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    env = {**os.environ, "FAULTY_PIDFILE": str(pidfile)}
    engine = Engine(EngineConfig(python=sys.executable, timeout_s=30, env=env))
    await engine.start()
    try:
        (res,) = await engine.lower(job("Spawner"), targets=["torch"])
        assert res.ok
        children = [int(p) for p in pidfile.read_text().split()]
        assert len(children) == 2
        worker = engine.worker_pid
        assert worker is not None
        # Killed (and reaped) by the worker right after the job, the setsid'd one too.
        for child in children:
            assert not os.path.exists(f"/proc/{child}"), f"child {child} outlived the job"
        assert family_pids(worker) == [worker]
        assert engine.restarts == 0  # no need to replace the worker for that
    finally:
        await engine.stop()
    assert family_pids(worker) == []


async def test_stray_thread_gets_the_worker_replaced(tmp_path: Path) -> None:
    beat = tmp_path / "beat"
    env = {**os.environ, "FAULTY_BEAT": str(beat)}
    engine = Engine(EngineConfig(python=sys.executable, timeout_s=30, env=env))
    await engine.start()
    try:
        (res,) = await engine.lower(job("Threads"), targets=["torch"])
        assert res.ok
        assert engine.restarts == 1
        await wait_for(beat.exists)
        first = beat.read_text()
        await asyncio.sleep(0.3)  # the thread beats every 50 ms: it must have stopped
        assert beat.read_text() == first
        await lower_healthy(engine)
    finally:
        await engine.stop()


def linked_venv(where: Path) -> str:
    """A venv whose packages (torch, tqdm, this project) are this one's, read through a `.pth`
    file with `site.addsitedir`: its own `site` does not list them as its site-packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True,
                   timeout=120)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "linked.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return str(python)


@pytest.mark.parametrize("interpreter", ["this venv", "a venv linked to it"])
async def test_library_thread_keeps_the_worker(tmp_path: Path, interpreter: str) -> None:
    """tqdm's monitor thread (a library's own, running no user code) is not a leak: the worker
    stays, while a user's thread (test above) still gets it replaced. Also when the packages
    come from a site-packages folder the interpreter's `site` does not list."""
    python = sys.executable if interpreter == "this venv" else linked_venv(tmp_path / "venv")
    names = tmp_path / "threads"
    env = {**os.environ, "FAULTY_THREADS": str(names)}
    engine = Engine(EngineConfig(python=python, timeout_s=60, env=env))
    await engine.start()
    try:
        (res,) = await engine.lower(job("LibraryThread"), targets=["torch"])
        assert res.ok, res.diagnostics
        assert "tqdm_monitor" in names.read_text().split(), "no monitor: the test proves nothing"
        pid = engine.worker_pid
        await lower_healthy(engine)
        assert engine.restarts == 0 and engine.worker_pid == pid
    finally:
        await engine.stop()


async def test_patched_torch_is_restored(engine: Engine) -> None:
    (res,) = await engine.lower(job("Patcher"), targets=["torch"])
    assert not res.ok and "sabotaged" in res.diagnostics[0].message
    await lower_healthy(engine)  # Linear + relu + torch.export work again
    assert engine.restarts == 0


async def test_abandoned_job_is_killed(engine: Engine) -> None:
    """A pane closed mid-export: nobody waits any more, so the worker stops working for it."""
    await engine.wait_ready()
    restarts = engine.restarts
    task = asyncio.ensure_future(
        engine.lower(job("HangForward"), targets=["linalg"], cancel_on_abandon=True))
    await wait_for(lambda: engine.busy)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_for(lambda: engine.restarts > restarts and not engine.busy)
    await lower_healthy(engine)


async def test_job_a_caller_keeps_survives_the_others_leaving(engine: Engine) -> None:
    """A pane and a check share one queued job; the pane leaves, the check still gets it."""
    await engine.wait_ready()
    hang = asyncio.ensure_future(
        engine.lower(job("HangForward"), targets=["linalg"], cancel_on_abandon=True))
    await wait_for(lambda: engine.busy)  # the worker is taken: what follows queues
    healthy = job("Healthy", text=Path(FAULTY).read_text() + "_SHARED = 1\n")
    pane = asyncio.ensure_future(
        engine.lower(healthy, targets=["torch"], cancel_on_abandon=True))
    check = asyncio.ensure_future(engine.lower(healthy, targets=["torch"]))
    await asyncio.sleep(0)  # both submitted (one job)
    pane.cancel()
    hang.cancel()  # frees the worker (killed: nobody waits for the hang)
    (res,) = await check
    assert res.ok and "torch.aten" in res.ir
    for task in (pane, hang):
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_lowering_a_job_in_flight_covers_joins_it(engine: Engine) -> None:
    """A hover's default target while the check lowers every backend: one job, not two."""
    await engine.wait_ready()
    healthy = job("Healthy", text=Path(FAULTY).read_text() + "_COVERED = 1\n")
    before = (await engine.stats()).worker.jobs_run
    every, one = await asyncio.gather(
        engine.lower(healthy, targets=["linalg", "tosa"]),
        engine.lower(healthy, targets=["tosa"]),
    )
    assert [r.target for r in every] == ["linalg", "tosa"]
    assert [r.target for r in one] == ["tosa"] and one[0].ir == every[1].ir
    assert (await engine.stats()).worker.jobs_run == before + 1


async def test_newer_text_supersedes_queued_and_running(tmp_path: Path) -> None:
    """v1 hangs in the worker, v2 queued, v3 arrives: v1 killed, v2 dropped, v3 runs."""
    # A time-out far past the test's waits: v1 can only end by being superseded.
    engine = Engine(EngineConfig(python=sys.executable, timeout_s=600))
    await engine.start()
    try:
        await _supersede(engine, tmp_path)
    finally:
        await engine.stop()


async def _supersede(engine: Engine, tmp_path: Path) -> None:
    await engine.wait_ready()
    path = str(tmp_path / "m.py")
    source = Path(FAULTY).read_text()
    hanging = source.replace("class HangForward(", "class M(")
    healthy = source.replace("class Healthy(", "class M(")
    v1 = asyncio.ensure_future(engine.lower(job("M", path=path, text=hanging),
                                            targets=["torch"]))
    await wait_for(lambda: engine.busy)
    v2 = asyncio.ensure_future(engine.lower(job("M", path=path, text=hanging + "_V2 = 2\n"),
                                            targets=["torch"]))
    await asyncio.sleep(0)  # let v2 queue
    (res,) = await asyncio.wait_for(
        engine.lower(job("M", path=path, text=healthy), targets=["torch"]), 120)
    assert res.ok
    for older in (v1, v2):  # v1 was killed, not left to its time-out
        with pytest.raises(LensError) as info:
            await older
        assert info.value.kind == "cancelled"


async def test_update_config_applies_without_restart(engine: Engine) -> None:
    await engine.wait_ready()
    pid = engine.worker_pid
    engine.update_config(timeout_s=2.0)
    assert engine.worker_pid == pid
    with pytest.raises(LensError) as info:
        await engine.lower(job("HangForward"), targets=["torch"])
    assert info.value.kind == "timeout"
    assert "longer than 2 s" in str(info.value), info.value  # the new time-out, not 20 s


async def test_stop_leaves_no_process(engine: Engine) -> None:
    await engine.wait_ready()
    pid = engine.worker_pid
    assert pid is not None and family_pids(pid) == [pid]
    await engine.stop()
    assert family_pids(pid) == []
    assert not alive(pid)


async def test_newer_text_does_not_kill_a_lowering_of_an_exported_program(
    engine: Engine, tmp_path: Path
) -> None:
    """A follow-up lowering (other backends of an already exported program) is not worth a
    worker restart when the text changes: it finishes, and the worker stays."""
    source = Path(__file__).parents[2] / "examples" / "transformer.py"
    path = tmp_path / "transformer.py"
    text = source.read_text()
    path.write_text(text)
    first = ModuleJob(path=str(path), module="TinyTransformer", text=text)
    (res,) = await engine.lower(first, targets=["linalg"])  # exports the program
    assert res.ok, res.diagnostics
    restarts = engine.restarts
    follow_up = asyncio.ensure_future(
        engine.lower(first, targets=["tosa", "stablehlo", "torch", "raw"]))
    # The follow-up holds the worker for only tens of milliseconds (less on a fast machine):
    # look at every turn of the event loop, not every 50 ms, or its whole run is missed. It
    # cannot end unseen: its reply needs the worker's lowering and a read from its pipe.
    await wait_for(lambda: engine.busy, 30, interval=0)
    newer = ModuleJob(path=str(path), module="TinyTransformer", text=text + "\nSCALE = 2\n")
    newer_task = asyncio.ensure_future(engine.lower(newer, targets=["linalg"]))
    results = await follow_up  # not cancelled
    assert [r.target for r in results] == ["tosa", "stablehlo", "torch", "raw"]
    (newer_res,) = await newer_task
    assert newer_res.ok
    assert engine.restarts == restarts

"""WorkerClient on its own: start-up, the channel, crashes from outside, limits, stop."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.harness.waiting import async_wait_until

from torch_mlir_lens.engine.worker_client import WorkerClient, channel
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.system.procs import family_pids, is_running

FAULTY = str(Path(__file__).resolve().parents[1] / "models" / "faulty.py")


def lower_job(module: str, targets: list[str] | None = None) -> dict[str, Any]:
    return {"op": "lower", "path": FAULTY, "module": module, "targets": targets or ["torch"]}


async def wait_for(predicate: Any, timeout: float = 30.0) -> None:
    """Poll `predicate` until it holds (the harness's waiting, with its time-out message)."""
    await async_wait_until(predicate, timeout, getattr(predicate, "__name__", "condition"))


@pytest.fixture
async def client() -> Any:
    c = WorkerClient(sys.executable, timeout_s=20, memory_limit_mb=1500)
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


async def test_start_returns_at_once_and_warms_in_background() -> None:
    # How fast: bench figure 7 (cold start: lenses and first hover since spawn).
    c = WorkerClient(sys.executable)
    await c.start()
    assert c.pid is not None and not c.ready  # start() did not wait for the imports
    try:
        await c.wait_ready()
        assert c.ready
        assert (await c.request({"op": "ping"}))["pid"] == c.pid  # the same, warm process
    finally:
        await c.stop()


async def test_an_idle_worker_warms_up_after_ready_and_still_takes_jobs() -> None:
    # Nothing waits at "ready": the worker uses the idle time for a warm-up lowering (torch's
    # lazy first-export work), announced on its stderr; a job sent then is served after it.
    seen: list[str] = []
    c = WorkerClient(sys.executable, on_output=lambda stream, text: seen.append(text))
    try:
        await c.wait_ready()
        await wait_for(lambda: any("warmed up in" in text for text in seen), 120)
        assert (await c.request({"op": "ping"}))["pid"] == c.pid
        assert not any("warm-up lowering failed" in text for text in seen)
        # The warm-up ran after the hygiene baseline: it must have changed nothing the
        # clean-up after the ping would then put back.
        assert not any("restored" in text for text in seen), seen
    finally:
        await c.stop()


async def test_a_worker_killed_from_outside_an_instant_ago_does_not_fail_the_next_job(
        client: WorkerClient) -> None:
    # SIGKILL from outside (the OOM killer), then a request before the event loop has run
    # once, so before it could notice the death: the request must get a fresh worker.
    await client.wait_ready()
    pid = client.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while is_running(pid):  # no await: the event loop must not see the exit first
        assert time.monotonic() < deadline, "the killed worker did not die"
        time.sleep(0.001)
    assert (await client.request({"op": "ping"}))["pid"] != pid
    assert client.restarts == 1


async def test_bad_job_is_an_error_not_a_dead_worker(client: WorkerClient) -> None:
    with pytest.raises(LensError) as info:
        await client.request({"op": "no-such-op"})
    assert info.value.kind == "bad-request"
    with pytest.raises(LensError) as info:
        await client.request({"op": "lower", "path": FAULTY, "module": "Nope",
                              "targets": ["torch"]})
    assert info.value.kind == "unknown-module"
    assert client.restarts == 0


async def test_killed_mid_job_is_a_crash_with_the_signal(client: WorkerClient) -> None:
    await client.wait_ready()
    task = asyncio.ensure_future(client.request(lower_job("HangForward")))
    await wait_for(lambda: client.busy)
    pid = client.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(LensError) as info:
        await task
    assert info.value.kind == "worker-crash"
    assert "SIGKILL" in info.value.message
    assert family_pids(pid) == []
    result = await client.request(lower_job("Healthy"))
    assert result["results"][0]["ok"]
    assert client.restarts == 1


async def test_memory_limit_lowered_while_running(client: WorkerClient) -> None:
    await client.wait_ready()
    task = asyncio.ensure_future(client.request(lower_job("HangForward")))
    await wait_for(lambda: client.busy)
    client.memory_limit_mb = 100  # the warm worker alone is bigger
    with pytest.raises(LensError) as info:
        await task
    assert info.value.kind == "memory-limit"
    client.memory_limit_mb = 1500
    assert (await client.request(lower_job("Healthy")))["results"][0]["ok"]


async def test_cancelling_the_caller_kills_the_job(client: WorkerClient) -> None:
    await client.wait_ready()
    task = asyncio.ensure_future(client.request(lower_job("HangForward")))
    await wait_for(lambda: client.busy)
    pid = client.pid
    assert pid is not None
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert family_pids(pid) == []
    assert (await client.request(lower_job("Healthy")))["results"][0]["ok"]


async def test_user_prints_go_to_the_drained_log(client: WorkerClient) -> None:
    result = await client.request(lower_job("Loud"), timeout=120)
    assert result["results"][0]["ok"]
    worker = client._worker
    assert worker is not None
    tail = worker.tails["stdout"]
    assert 0 < len(tail) <= 64 * 1024 and tail.endswith(b"x\n")
    assert (await client.request({"op": "ping"}))["pid"] == client.pid


async def test_stop_is_idempotent_and_reaps(client: WorkerClient) -> None:
    await client.wait_ready()
    pid = client.pid
    assert pid is not None
    await client.stop()
    await client.stop()
    assert family_pids(pid) == []
    assert client.pid is None


async def test_cancel_while_warming_up_keeps_the_worker() -> None:
    c = WorkerClient(sys.executable, timeout_s=60)
    await c.start()
    try:
        pid = c.pid
        task = asyncio.ensure_future(c.request(lower_job("Healthy")))
        await wait_for(lambda: c._cancel_event is not None)
        assert not c.ready  # still importing torch
        assert await c.cancel()
        with pytest.raises(LensError) as info:
            await task
        assert info.value.kind == "cancelled"
        assert c.pid == pid and c.restarts == 0
        assert (await c.request(lower_job("Healthy")))["results"][0]["ok"]
    finally:
        await c.stop()


async def test_concurrent_first_requests_share_one_worker() -> None:
    """Callers racing to use a not-yet-spawned worker must not each spawn one (one would leak)."""
    client = WorkerClient(sys.executable, timeout_s=120)
    try:
        await asyncio.gather(client.wait_ready(180), client.wait_ready(180), client.start())
        assert client.restarts == 0
        assert client._spawns == 1
    finally:
        await client.stop()


async def test_ending_workers_that_just_died_leaves_their_reaping_to_asyncio(
        caplog: pytest.LogCaptureFixture) -> None:
    # A worker that has just died is a zombie for a moment; signalling it through Popen then
    # reaped it before asyncio's child watcher, which logged "Unknown child process pid N" on
    # the CLI's stderr (a flaky one-line-error test). Ending many workers caught in that
    # moment makes the race likely: none may be reaped twice.
    caplog.set_level(logging.WARNING, logger="asyncio")
    for _ in range(100):
        proc = await asyncio.create_subprocess_exec(
            "true", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
        reply_r, reply_w = os.pipe()
        job_r, job_w = os.pipe()
        worker = await channel.attach(proc, reply_r, job_w, None)
        os.close(reply_w)  # the worker's ends: only it would hold them
        os.close(job_r)
        while is_running(proc.pid):  # no await: asyncio must not see the exit first
            pass
        await channel.end(worker)
        assert proc.returncode == 0
    assert not [r.getMessage() for r in caplog.records if "Unknown child" in r.getMessage()]


def test_the_pass_runners_a_crash_dump_is_matched_against_exist() -> None:
    """`crashed_in_a_pass` matches the worker's pass runners by file and function: each must
    still be there, else a crash in a pass reads as a plain worker crash after a move."""
    import inspect

    from torch_mlir_lens.engine.worker_client import guards
    from torch_mlir_lens.worker.culprits import op_isolation
    from torch_mlir_lens.worker.stages import pipeline

    for module, function in ((pipeline, "_run_parsed"), (op_isolation, "_errors")):
        fn = getattr(module, function)
        file, line = inspect.getsourcefile(fn), inspect.getsourcelines(fn)[1] + 1
        dump = (f"Current thread 0x1 (most recent call first):\n"
                f'  File "{file}", line {line} in {function}\n')
        assert guards.crashed_in_a_pass(dump), dump
    elsewhere = ('Current thread 0x1 (most recent call first):\n'
                 '  File "/x/worker/main.py", line 3 in main\n')
    assert not guards.crashed_in_a_pass(elsewhere)

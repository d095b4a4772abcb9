"""One running worker and its pipes: the job channel (`protocol.framing`) and output drains.

The worker's stdout and stderr are separate pipes that are drained continuously (the last
~64 KB of each are kept for error messages), so user prints can neither block the worker nor
corrupt the channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.engine.worker_client import spawn
from torch_mlir_lens.engine.worker_client.spawn import WorkerProcess
from torch_mlir_lens.protocol import framing
from torch_mlir_lens.protocol.jobs import Reply

log = logging.getLogger(__name__)

TAIL_BYTES = 64 * 1024

OutputCallback = Callable[[str, str], None]  # (stream name "stdout" | "stderr", text)


@dataclass
class Worker:
    """One worker process and its pipes."""

    proc: WorkerProcess
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    started: float
    ready: asyncio.Future[dict[str, Any]]
    tails: dict[str, bytearray] = field(default_factory=lambda: {"stdout": bytearray(),
                                                               "stderr": bytearray()})
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    busy: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail_text(self, stream: str = "stderr") -> str:
        """The last output of `stream`, decoded."""
        return bytes(self.tails[stream]).decode("utf-8", "replace")

    @property
    def is_ready(self) -> bool:
        """True once the worker sent its ready frame."""
        ready = self.ready
        return ready.done() and not ready.cancelled() and ready.exception() is None

    async def exchange(self, frame: bytes, job_id: int) -> dict[str, Any]:
        """Send one encoded job frame; return the reply with its id (stale ones dropped)."""
        self.writer.write(frame)
        await self.writer.drain()
        while True:
            reply = await framing.read_frame_async(self.reader)
            if reply.get("id") == job_id:
                return reply
            log.debug("dropping a stale worker reply %r", reply.get("id"))


async def attach(proc: WorkerProcess, from_worker_r: int, to_worker_w: int,
                 on_output: OutputCallback | None) -> Worker:
    """Connect the channel and the output drains of a started worker process."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(from_worker_r, "rb", buffering=0))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(to_worker_w, "wb", buffering=0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    worker = Worker(proc=proc, reader=reader, writer=writer, started=time.monotonic(),
                    ready=loop.create_future())
    assert proc.stdout is not None and proc.stderr is not None
    worker.tasks.append(asyncio.ensure_future(_drain(worker, "stdout", proc.stdout, on_output)))
    worker.tasks.append(asyncio.ensure_future(_drain(worker, "stderr", proc.stderr, on_output)))
    worker.tasks.append(asyncio.ensure_future(_read_ready(worker)))
    return worker


async def _read_ready(worker: Worker) -> None:
    try:
        frame = await framing.read_frame_async(worker.reader)
    except Exception as exc:  # EOF: the worker died while importing
        if not worker.ready.done():
            worker.ready.set_exception(exc)
            worker.ready.exception()  # mark retrieved; requests look at the process
        return
    if not worker.ready.done():
        worker.ready.set_result(Reply.from_json(frame).result or {})


async def _drain(worker: Worker, name: str, stream: asyncio.StreamReader,
                 on_output: OutputCallback | None) -> None:
    tail = worker.tails[name]
    while True:
        try:
            chunk = await stream.read(1 << 16)
        except (OSError, ValueError):
            return
        if not chunk:
            return
        tail += chunk
        if len(tail) > TAIL_BYTES:
            del tail[: len(tail) - TAIL_BYTES]
        if on_output is not None:
            with contextlib.suppress(Exception):
                on_output(name, chunk.decode("utf-8", "replace"))


async def end(worker: Worker) -> None:
    """End a worker with its process group and descendants; reap it; close its channel.

    No graceful EOF first: the worker holds nothing worth saving, and once it exits on its
    own, descendants that left its group are re-parented out of reach.
    """
    proc = worker.proc
    await spawn.kill_family(proc.pid)
    spawn.kill_unreaped(proc)  # in case /proc showed no family
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(proc.wait(), 5.0)
    await close(worker)
    log.info("worker %d stopped (%s)", proc.pid,
             spawn.signal_name(proc.returncode) if proc.returncode is not None else "?")


async def close(worker: Worker) -> None:
    """Close our end of the channel and let the drains read what is left, then stop them."""
    with contextlib.suppress(Exception):
        worker.writer.close()
    for task in worker.tasks:
        if not task.done():
            # Let the drains read what is left (the last stderr line) before stopping them.
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), 0.5)
            task.cancel()
    if not worker.ready.done():
        worker.ready.cancel()

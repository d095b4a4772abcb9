"""Caller side of the worker process (no torch): spawn, channel, guards, and the client.

- `spawn.py`: start a worker (before any event loop: `prespawn`, or with asyncio), kill its family;
- `channel.py`: one running worker, its job pipes (`protocol.framing`) and output drains;
- `guards.py`: the memory poll, where a job hung, how a crash or a limit is worded;
- `client.py`: `WorkerClient`, one job at a time, restart on failure.
"""

from torch_mlir_lens.engine.worker_client.channel import TAIL_BYTES, OutputCallback
from torch_mlir_lens.engine.worker_client.client import STARTUP_TIMEOUT_S, WorkerClient
from torch_mlir_lens.engine.worker_client.guards import MEMORY_POLL_S
from torch_mlir_lens.engine.worker_client.spawn import ADDRESS_SPACE_SLACK_MB

__all__ = [
    "ADDRESS_SPACE_SLACK_MB", "MEMORY_POLL_S", "STARTUP_TIMEOUT_S", "TAIL_BYTES",
    "OutputCallback", "WorkerClient",
]

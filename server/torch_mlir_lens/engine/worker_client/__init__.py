"""Caller side of the worker process (no torch): spawn, channel, guards, and the client.

- `spawn.py`: start a worker (before any event loop: `prespawn`, or with asyncio), kill its family;
- `channel.py`: one running worker, its job pipes (`protocol.framing`) and output drains;
- `guards.py`: the memory poll, where a job hung, how a crash or a limit is worded;
- `client.py`: `WorkerClient`, one job at a time, restart on failure.

The names below load on first use (PEP 562), so that `spawn` alone is quick to import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch_mlir_lens.engine.worker_client.channel import TAIL_BYTES, OutputCallback
    from torch_mlir_lens.engine.worker_client.client import STARTUP_TIMEOUT_S, WorkerClient
    from torch_mlir_lens.engine.worker_client.guards import MEMORY_POLL_S
    from torch_mlir_lens.engine.worker_client.spawn import ADDRESS_SPACE_SLACK_MB

__all__ = [
    "ADDRESS_SPACE_SLACK_MB", "MEMORY_POLL_S", "STARTUP_TIMEOUT_S", "TAIL_BYTES",
    "OutputCallback", "WorkerClient",
]
_HOMES = {"TAIL_BYTES": "channel", "OutputCallback": "channel", "STARTUP_TIMEOUT_S": "client",
          "WorkerClient": "client", "MEMORY_POLL_S": "guards", "ADDRESS_SPACE_SLACK_MB": "spawn"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)

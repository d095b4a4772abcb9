"""Caller side of lowering (no torch import): the Engine, its cache and the worker client.

The names below load on first use (PEP 562): the language server spawns its worker through
`worker_client.spawn` first thing at start-up, and must not wait for the engine's imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch_mlir_lens.engine.engine import Engine, EngineConfig, ModuleJob
    from torch_mlir_lens.engine.module_jobs import GivenInputs, JobSettings, module_job
    from torch_mlir_lens.engine.worker_client import WorkerClient

__all__ = ["Engine", "EngineConfig", "GivenInputs", "JobSettings", "ModuleJob",
           "WorkerClient", "module_job"]
_HOMES = {"Engine": "engine", "EngineConfig": "engine", "ModuleJob": "engine",
          "WorkerClient": "worker_client", "GivenInputs": "module_jobs",
          "JobSettings": "module_jobs", "module_job": "module_jobs"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)

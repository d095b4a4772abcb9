"""Caller side of lowering (no torch import): the Engine, its cache and the worker client."""

from torch_mlir_lens.engine.engine import Engine, EngineConfig, ModuleJob
from torch_mlir_lens.engine.worker_client import WorkerClient

__all__ = ["Engine", "EngineConfig", "ModuleJob", "WorkerClient"]

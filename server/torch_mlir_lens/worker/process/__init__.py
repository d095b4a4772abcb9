"""The worker process's own state, with one owner (`state.py`: `WORKER`): what it keeps from
one job to the next, each part defined by the module that uses it and asked for here. The
bottom layer of the worker: every other part may use it, it uses none of them."""

from torch_mlir_lens.worker.process.state import WORKER, WorkerState

__all__ = ["WORKER", "WorkerState"]

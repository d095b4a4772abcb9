"""A compiled module run with IREE's runtime (`iree.runtime`), in the worker.

    device_error(driver)            → None when this machine has the device, else why not
    load(vmfb, driver, threads=...) → Loaded: `main` callable on numpy arrays
    to_numpy(tensor), to_torch(array, like)

Tensors cross as numpy arrays in eager's argument order (the compiled `main` takes the
program's flattened inputs, torch.export's order, and returns its results in order). The CPU
driver (`local-task`) runs on as many threads as torch uses in this process, so that its time
and eager's are taken alike (timing.py); IREE reads that setting once, before its first CPU
device.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.worker.process import WORKER

_LOCK = threading.Lock()


@dataclass
class _Driver:
    """The CPU driver's thread count, once set (IREE's flags are the process's)."""

    threads: int = 0


def _rt() -> Any:
    import iree.runtime as rt  # imported where a module runs, never at the worker's start

    return rt


def cpu_threads() -> int:
    """How many threads the CPU driver runs on (torch's count when IREE first ran here)."""
    with _LOCK:
        driver = WORKER.part(_Driver)
        if not driver.threads:
            count = max(1, torch.get_num_threads())
            _rt().flags.parse_flags(f"--task_topology_max_group_count={count}")
            driver.threads = count
        return driver.threads


def device_error(driver: str) -> str | None:
    """None when a device of `driver` can be opened here, else the reason in a few words."""
    if driver.startswith("local"):
        cpu_threads()
        return None
    try:
        _rt().get_device(driver)
    except Exception as exc:  # "Error creating driver: c/...c:66: UNAVAILABLE; CUDA driver ..."
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        reason = re.split(r"\b[A-Z_]{4,}; ", text, maxsplit=1)[-1]  # past IREE's status code
        return reason.split(";")[0].split(": please")[0].strip()[:160]
    return None


@dataclass
class Loaded:
    """A compiled module loaded on a device: `main` and what keeps it alive."""

    main: Any
    context: Any
    driver: str

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        """Run `main` on the inputs; its results as numpy arrays, in order."""
        out = self.main(*inputs)
        results = out if isinstance(out, tuple | list) else (out,)
        return [np.asarray(r.to_host() if hasattr(r, "to_host") else r) for r in results]


def load(vmfb: str, driver: str) -> Loaded:
    """Load the module at `vmfb` on `driver`'s device; LensError("verify-error") when it
    cannot be loaded or has no `main`."""
    rt = _rt()
    if driver.startswith("local"):
        cpu_threads()
    try:
        config = rt.Config(driver)
        module = rt.VmModule.mmap(config.vm_instance, vmfb)
        context = rt.SystemContext(vm_modules=[module], config=config)
        main = context.modules[module.name]["main"]
    except Exception as exc:
        raise LensError(ErrorKind.VERIFY_ERROR,
                        f"IREE's runtime cannot load the compiled module: {exc}") from exc
    return Loaded(main, context, driver)


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A tensor as the runtime takes it: C-contiguous, on the CPU; bfloat16 through
    ml_dtypes (numpy has none), booleans as IREE's i8."""
    t = tensor.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    array = t.numpy()
    return array.astype(np.int8) if array.dtype == np.bool_ else array


def to_torch(array: np.ndarray, like: torch.Tensor | None = None) -> torch.Tensor:
    """A runtime result as a tensor, in eager's dtype when the bytes allow (bfloat16 from
    ml_dtypes, booleans from i8)."""
    if array.dtype.name == "bfloat16":
        tensor = torch.from_numpy(np.ascontiguousarray(array).view(np.int16)).view(
            torch.bfloat16)
    else:
        tensor = torch.from_numpy(np.ascontiguousarray(array))
    if like is not None and like.dtype == torch.bool and tensor.dtype != torch.bool:
        tensor = tensor != 0
    return tensor


__all__ = ["Loaded", "cpu_threads", "device_error", "load", "to_numpy", "to_torch"]

"""A library's lazy module in `sys.modules` (as `transformers` and others install them) whose
attribute access imports, and fails with ImportError: the worker's scans of `sys.modules` (which
files a job read, which user modules to import afresh) read `__file__` without touching it, so
the lowering goes on, as plain torch-mlir's does."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from torch_mlir_lens.worker.job_handlers import run_job

SOURCE = """\
import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(2, 8),)
class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))
"""


class _FailingLazyModule:
    """A lazy loader put in `sys.modules` in place of a module (not a module object itself,
    so `inspect` and torch pass it by): any attribute imports the real module, and that
    import fails (a missing optional dependency) with ImportError, for `__file__` too."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise ImportError(f"Lazy import of LazyModule({self._name}.{attr}) failed")


def test_a_failing_lazy_module_does_not_stop_a_lowering(tmp_path: Path) -> None:
    path = tmp_path / "small.py"
    path.write_text(SOURCE)
    name = "lens_lazy_library"
    sys.modules[name] = _FailingLazyModule(name)  # type: ignore[assignment]
    try:
        for job in range(2):  # the first job's scans and the next one's, after the first
            reply = run_job({"id": job, "op": "lower", "path": str(path), "module": "Small",
                             "targets": ["linalg"]})
            assert reply["ok"], reply.get("error")
            (result,) = reply["result"]["results"]
            assert result["ok"] and "linalg." in result["ir"]
    finally:
        del sys.modules[name]

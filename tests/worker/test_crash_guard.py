"""Steps that crash the process (torch-mlir asserting or segfaulting) run in a forked child.

The crash used here is real: torch-mlir 20261001's scatter conversion writes out of bounds for a
negative `dim` (worker/shims/scatter_dims.py); with that shim switched off, Linalg's pipeline dies
on `torch.scatter(x, -1, ...)` (the diagnostic saying "crashed torch-mlir (SIG...)" proves it did).
The worker (here: the test process) must survive it, name the pass and the op at its line,
lower everything else, and answer the other backends.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch

from torch_mlir_lens.system.procs import family_rss_bytes
from torch_mlir_lens.worker.ir import crash_guard
from torch_mlir_lens.worker.lowering import ProgramLowerer, export_program

HERE = Path(__file__).resolve()


class ScatterLast(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        _, idx = y.max(dim=-1, keepdim=True)
        masked = torch.scatter(y, -1, idx, 0.5)  # the line torch-mlir crashes on
        return masked * 2


SCATTER_LINE = next(n for n, text in enumerate(HERE.read_text().splitlines(), start=1)
                    if "the line torch-mlir crashes on" in text and "masked" in text)


def test_a_child_answers_raises_or_crashes_without_taking_the_parent() -> None:
    assert crash_guard.run_forked(lambda: {"pid": os.getpid()}, step="s")["pid"] != os.getpid()
    with pytest.raises(ValueError, match="bad value"):
        crash_guard.run_forked(lambda: (_ for _ in ()).throw(ValueError("bad value")), step="s")

    def dies() -> None:
        os.write(2, b"some noise\nLLVM ERROR: out of memory\nAllocation failed\n")
        os.abort()

    with pytest.raises(crash_guard.Crash) as crash:
        crash_guard.run_forked(dies, step="the test step")
    assert crash.value.signal_name == "SIGABRT"
    assert crash.value.detail == "LLVM ERROR: out of memory"
    assert crash.value.message().startswith("torch-mlir crashed (SIGABRT) in the test step")
    crash_guard.reap_pending()


def test_a_forked_child_is_not_counted_twice_in_the_family_memory() -> None:
    ballast = bytearray(200 << 20)  # touched: resident in this process, shared with the child
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1
    alone = family_rss_bytes(os.getpid())
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child waits for the pipe to close, touching nothing
        os.close(write_fd)
        os.read(read_fd, 1)
        os._exit(0)
    os.close(read_fd)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not os.path.exists(f"/proc/{pid}/smaps_rollup"):
            time.sleep(0.01)
        with_child = family_rss_bytes(os.getpid())
    finally:
        os.close(write_fd)
        os.waitpid(pid, 0)
    assert with_child < alone + (50 << 20), (alone >> 20, with_child >> 20)
    del ballast


@pytest.fixture
def crashing_scatter(monkeypatch: pytest.MonkeyPatch) -> ProgramLowerer:
    """A lowerer whose Linalg pipeline really crashes torch-mlir (the scatter shim is off)."""
    import torch_mlir_lens.worker.stages.torch_export as export_mod

    monkeypatch.setattr(export_mod, "positive_scatter_dims", lambda module_op: 0)
    monkeypatch.setenv(crash_guard.GUARD_PASSES_ENV, "1")  # as in a worker after a crash
    program = export_program(ScatterLast(), (torch.randn(8, 4),), user_files=[str(HERE)])
    return ProgramLowerer(program, module_name="ScatterLast", user_files=[str(HERE)])


def test_a_crashing_pass_becomes_a_culprit_at_its_line(crashing_scatter: ProgramLowerer,
                                                      ) -> None:
    linalg = crashing_scatter.lower("linalg")
    assert not linalg.ok and linalg.partial, [d.message for d in linalg.diagnostics]
    [diag] = [d for d in linalg.diagnostics if d.severity == "error"]
    assert diag.op == "torch.aten.scatter.src"
    assert (diag.file, diag.line) == (str(HERE), SCATTER_LINE)
    assert "crashed torch-mlir (SIG" in diag.message
    assert "convert-torch-to-tmtensor" in diag.message
    # Everything else is lowered; the scatter is a call left in place.
    assert "linalg.generic" in linalg.ir and "call @torch.aten.scatter.src" in linalg.ir
    # The other backends answer, from the same worker.
    assert crashing_scatter.lower("tosa").ok and crashing_scatter.lower("stablehlo").ok

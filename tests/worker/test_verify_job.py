"""The `verify` job: a user file in, a VerifyResult out (on its own, and through run_job)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn

from torch_mlir_lens.protocol.jobs import VerifyJob
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.worker.verify.job import run_verify_job, verify_callable

USER_FILE = textwrap.dedent(
    """\
    import torch
    from torch import nn


    # torch-mlir-lens: inputs=(torch.randn(2, 3, 10, 10),)
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.fc = nn.Linear(4, 5)

        def forward(self, x, scale: float = 2.0):
            y = torch.relu(self.conv(x)).mean((2, 3))
            return self.fc(y) * scale, y.argmax(-1)


    # torch-mlir-lens: inputs=(torch.randn(4, 8),)
    class Broken(nn.Module):
        def forward(self, x):
            return torch.fft.rfft(x).abs()


    # torch-mlir-lens: inputs=(torch.randn(4, 8),)
    def plain(x):
        return torch.sigmoid(x) + 1
    """
)


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "lens_verify_user.py"
    path.write_text(USER_FILE)
    return path


def test_module_from_a_file_verifies(user_file: Path) -> None:
    result = run_verify_job(VerifyJob(path=str(user_file), module="Net"))
    assert result.ok, result.message
    assert [o.dtype for o in result.outputs] == ["float32", "int64"]
    assert result.inputs_source == "comment"
    assert {"load", "inputs", "export", "lower", "jit", "run", "total"} <= set(result.timings)


def test_plain_function_and_unsaved_text(user_file: Path) -> None:
    text = user_file.read_text().replace("torch.sigmoid(x) + 1", "torch.sigmoid(x) * 3")
    result = run_verify_job(VerifyJob(path=str(user_file), text=text, module="plain"))
    assert result.ok, result.message


def test_lowering_failure_lists_the_unsupported_op_at_its_line(user_file: Path) -> None:
    result = run_verify_job(VerifyJob(path=str(user_file), module="Broken"))
    assert not result.ok
    assert result.kind in (ErrorKind.UNSUPPORTED_OP, ErrorKind.LOWERING_ERROR)
    lines = user_file.read_text().splitlines()
    abs_line = next(i for i, line in enumerate(lines, 1) if ".abs()" in line)
    assert any(d.line == abs_line for d in result.diagnostics)
    assert result.message.startswith("✗ cannot lower to Linalg")


def test_tolerances_from_the_job_apply(user_file: Path) -> None:
    result = run_verify_job(VerifyJob(path=str(user_file), module="Net", rtol=0.5, atol=0.5))
    assert result.ok and (result.rtol, result.atol) == (0.5, 0.5)
    assert result.outputs[0].rtol == 0.5
    assert result.outputs[1].rtol == 0.0  # the int output stays exact


@pytest.mark.parametrize("bad", [{"rtol": "x"}, {"atol": -1}, {"opt_level": 9}, {"module": ""},
                                 {"opt_level": True}])
def test_bad_requests_are_the_jobs_error(user_file: Path, bad: dict) -> None:
    """What a worker reads off the pipe: a wrong field is the job's bad-request error."""
    from torch_mlir_lens.worker.job_handlers import run_job

    reply = run_job({"id": 3, "op": "verify", "path": str(user_file), "module": "Net",
                          **bad})
    assert not reply["ok"] and reply["error"]["kind"] == ErrorKind.BAD_REQUEST, reply


def test_unknown_module_is_an_error(user_file: Path) -> None:
    with pytest.raises(LensError) as info:
        run_verify_job(VerifyJob(path=str(user_file), module="Nope"))
    assert info.value.kind == ErrorKind.UNKNOWN_MODULE


def test_run_job_dispatches_verify(user_file: Path) -> None:
    from torch_mlir_lens.worker.job_handlers import run_job

    reply = run_job({"id": 7, "op": "verify", "path": str(user_file), "module": "plain"})
    assert reply["ok"] and reply["id"] == 7
    assert reply["result"]["module"] == "plain"
    assert reply["result"]["ok"], reply["result"]["message"]
    assert reply["result"]["message"].startswith("✓ matches eager")
    # A module that does not lower is a verdict (the reply is ok), not a failed job...
    broken = run_job({"id": 8, "op": "verify", "path": str(user_file), "module": "Broken"})
    assert broken["ok"] and not broken["result"]["ok"]
    # ... an unknown module is the job's error.
    unknown = run_job({"id": 9, "op": "verify", "path": str(user_file), "module": "Nope"})
    assert not unknown["ok"] and unknown["error"]["kind"] == ErrorKind.UNKNOWN_MODULE


class UpdatesItsState(nn.Module):
    """A forward that writes buffers (a cache filled in place, a call counter): torch.export
    returns the written state before the output, eager keeps it in the module."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(16, 8), persistent=False)
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.cache[: x.shape[0]] = torch.sin(x)
        self.calls += 1
        return self.cache[: x.shape[0]] * 2 + x


def test_state_a_forward_writes_is_not_taken_for_an_output() -> None:
    result = verify_callable(UpdatesItsState(), (torch.randn(4, 8),),
                             module_name="UpdatesItsState", user_files=[__file__])
    assert result.ok, result.message
    assert len(result.outputs) == 1

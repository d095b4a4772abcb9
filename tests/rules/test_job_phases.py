"""Which phase of a job a worker's faulthandler dump shows (rules/job_phases.py): a Verify
stopped at its time limit in the JIT compile is not "the lowering"."""

from __future__ import annotations

from torch_mlir_lens.rules.job_phases import phase_of_stack, time_limit_message

ROOT = "/venv/lib/python3.11/site-packages/torch_mlir_lens/worker"


def _dump(*frames: str) -> str:
    """A faulthandler dump of the main thread, innermost frame first."""
    lines = ["Thread 0x00007f (most recent call first):"]
    lines += [f'  File "{f}", line 12 in fn' for f in frames]
    return "Fatal Python error: ...\n\n" + "\n".join(lines) + "\n"


def test_a_verify_stopped_in_the_jit_names_the_jit() -> None:
    dump = _dump("/venv/lib/python3.11/site-packages/torch_mlir/execution_engine.py",
                 f"{ROOT}/verify/jit.py", f"{ROOT}/verify/linalg.py", f"{ROOT}/verify/job.py",
                 f"{ROOT}/job_handlers.py", f"{ROOT}/main.py")
    assert phase_of_stack(dump) == "the JIT compile"
    assert time_limit_message(180, dump) == ("the JIT compile took longer than 180 s and was "
                                             "stopped; the worker was restarted")


def test_each_phase_by_its_innermost_worker_frame() -> None:
    assert phase_of_stack(_dump(f"{ROOT}/stages/pipeline.py", f"{ROOT}/lowering/lowerer.py",
                                f"{ROOT}/job_handlers.py")) == "the lowering"
    assert phase_of_stack(_dump("/user/model.py", f"{ROOT}/stages/torch_export.py",
                                f"{ROOT}/job_handlers.py")) == "the export (torch.export)"
    assert phase_of_stack(_dump("/user/model.py", f"{ROOT}/inputs/recording.py")) == \
        "the example inputs (running the module)"


def test_without_a_worker_frame_the_job_is_named_as_before() -> None:
    assert phase_of_stack("no dump here") is None
    assert phase_of_stack(_dump("/user/model.py")) is None
    assert time_limit_message(60, "", line=7) == ("the lowering took longer than 60 s and was "
                                                  "stopped (at line 7); the worker was "
                                                  "restarted")

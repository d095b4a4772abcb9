"""The typed worker jobs of `protocol.jobs`, read by the real worker code (`run_job`, in-process):
a wrong field is a located bad-request, and every reply lists the exported programs the worker
holds under the key the engine computes for the same job (no mirrored cache in the engine)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torch_mlir_lens.engine import ModuleJob
from torch_mlir_lens.engine.job_keys import filled
from torch_mlir_lens.engine.scheduler import program_needed
from torch_mlir_lens.protocol.jobs import LowerJob, Reply, StatsJob, VerifyJob, parse_job
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.job_handlers import run_job

USER_FILE = textwrap.dedent(
    """\
    import torch
    from torch import nn


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class Small(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return torch.relu(self.fc(x))


    # torch-mlir-lens: inputs=(torch.randn(2, 4),)
    class Other(nn.Module):
        def forward(self, x):
            return x * 2
    """
)


@pytest.mark.parametrize("frame, problem", [
    ({"op": "lower", "path": "/x.py"}, "the job has no 'module'"),
    ({"op": "lower", "path": "/x.py", "module": "M", "targets": [3]}, "'targets' of a lower job"),
    ({"op": "verify", "path": "/x.py", "module": "M", "opt_level": "2"}, "'opt_level'"),
    ({"op": "export", "path": "/x.py", "module": "M"}, "the job has no 'output'"),
    ({"op": "warp"}, "unknown job op 'warp'"),
    ([1, 2], "a job must be a JSON object"),
])
def test_bad_jobs_are_named_bad_requests(frame: object, problem: str) -> None:
    with pytest.raises(LensError) as caught:
        parse_job(frame)
    assert caught.value.kind == "bad-request" and problem in caught.value.message
    reply = Reply.from_json(run_job({"id": 5, **frame} if isinstance(frame, dict) else frame))
    assert not reply.ok and reply.error is not None and problem in reply.error["message"]


def test_jobs_round_trip_through_their_json(tmp_path: Path) -> None:
    base = ModuleJob(path=str(tmp_path / "m.py"), module="M", text="x = 1\n")
    job = base.as_job(VerifyJob, rtol=1e-3, opt_level=2)
    again = parse_job(job.to_json())
    assert again == job and again.to_json()["op"] == "verify"
    assert parse_job(StatsJob().to_json()) == StatsJob()


def engine_key(job: LowerJob) -> str:
    """The exported program the engine's queue says a lowering needs."""
    key = program_needed(job)
    assert key is not None
    return key


def test_replies_name_the_programs_the_worker_holds(tmp_path: Path) -> None:
    path = tmp_path / "small_model.py"
    path.write_text(USER_FILE)
    job = filled(ModuleJob(path=str(path), module="Small")).as_job(LowerJob, targets=["linalg"])
    request = job.to_json()
    expected = engine_key(job)

    first = Reply.from_json(run_job({"id": 1, **request}))
    assert first.ok and first.result is not None
    assert first.result["results"][0]["ok"] is True
    assert expected in first.programs  # what the engine will look for

    # An edit to another module of the file keeps the program; the key is the same.
    edited = {**request, "text": USER_FILE.replace("x * 2", "x * 3")}
    edited_key = engine_key(filled(
        ModuleJob(path=str(path), module="Small", text=edited["text"])).as_job(
            LowerJob, targets=["tosa"]))
    assert edited_key == expected
    # A different module definition is another program, reported once it is exported.
    changed_text = USER_FILE.replace("nn.Linear(4, 3)", "nn.Linear(4, 5)")
    changed_job = filled(ModuleJob(path=str(path), module="Small", text=changed_text)).as_job(
        LowerJob, targets=["linalg"])
    changed = changed_job.to_json()
    changed_key = engine_key(changed_job)
    assert changed_key != expected and changed_key not in first.programs
    second = Reply.from_json(run_job({"id": 2, **changed}))
    assert second.ok and changed_key in second.programs and expected in second.programs

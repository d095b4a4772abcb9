"""The worker's start-up and clean-up: run in fresh interpreters, as the worker runs.

Both change process-wide state (the garbage collector, the child-subreaper flag) that must not
leak into the test process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from torch_mlir_lens.worker import main

MLP = str(Path(__file__).resolve().parents[2] / "examples" / "mlp.py")

FIRST_JOB_WITHOUT_WARM_UP = """
import gc, json, sys
from torch_mlir_lens.worker.loading import hygiene
from torch_mlir_lens.worker import main
main._prepare()
facts = {"frozen": gc.get_freeze_count(), "gc_enabled": gc.isenabled(),
         "young_threshold": gc.get_threshold()[0]}
baseline = hygiene.Baseline.take()
from torch_mlir_lens.worker.job_handlers import run_job
reply = run_job({"id": 1, "op": "lower", "path": sys.argv[1], "module": "MLP",
                 "targets": ["linalg"]})
facts["ok"] = reply["ok"]
facts["restored"] = baseline.restore()
print(json.dumps(facts))
"""

DESCENDANTS = """
import json, subprocess
from torch_mlir_lens.worker.loading import hygiene
facts = {"before_subreaper": hygiene._may_have_descendants()}
facts["subreaper"] = hygiene.become_subreaper()
facts["no_child"] = hygiene._may_have_descendants()
child = subprocess.Popen(["sleep", "60"])
facts["with_child"] = hygiene._may_have_descendants()
facts["killed"] = hygiene.kill_descendants()
facts["after_kill"] = hygiene._may_have_descendants()
print(json.dumps(facts))
"""


def _run(script: str, *args: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_first_job_without_warm_up_leaves_nothing_to_restore() -> None:
    # A job that arrives while the worker starts runs before the warm-up lowering. What
    # torch changes lazily on a first export (torch._dynamo wraps torch.manual_seed, tempfile
    # picks its directory) was done by the start-up imports, so the hygiene baseline already
    # has it and the clean-up after that first job puts nothing back.
    facts = _run(FIRST_JOB_WITHOUT_WARM_UP, MLP)
    assert facts["ok"]
    assert facts["restored"] == []
    # torch's objects are frozen out of the collector, which is on again.
    assert facts["frozen"] > 100_000
    assert facts["gc_enabled"]
    assert facts["young_threshold"] == main.GC_YOUNG_THRESHOLD  # collections stay rare


def test_descendant_scan_is_skipped_only_when_there_can_be_none() -> None:
    facts = _run(DESCENDANTS)
    assert facts["before_subreaper"] is True  # no subreaper: orphans could hide, always scan
    assert facts["subreaper"] is True
    assert facts["no_child"] is False
    assert facts["with_child"] is True
    assert facts["killed"] == 1
    assert facts["after_kill"] is False

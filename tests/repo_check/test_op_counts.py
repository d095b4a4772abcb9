"""The share of ops that lower, per backend, through the real CLI: `check --format json`
records per module and target the ops of the backend's IR and those it rejected; `merge` of two
shards keeps them, also beside a shard written before the counts (which the page then says it
could not count), and `check --format html` draws them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(600)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_mlir_lens", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=500)


def _targets(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["name"]: m["targets"] for m in report["modules"]}


def test_reports_count_the_ops_that_lower_and_merge_keeps_them(tmp_path: Path) -> None:
    shutil.copy(ROOT / "examples" / "unsupported_ops.py", tmp_path / "unsupported_ops.py")
    for i in (1, 2):
        proc = _run("check", "unsupported_ops.py", "--shard", f"{i}/2", "-j", "1",
                    "--rewrites", "off", "--format", "json", "-o", f"shard{i}.json",
                    cwd=tmp_path)
        assert proc.returncode == 1, proc.stderr  # its modules do not lower everywhere
    shards = [json.loads((tmp_path / f"shard{i}.json").read_text()) for i in (1, 2)]
    seen = {**_targets(shards[0]), **_targets(shards[1])}
    assert set(seen) == {"QuantileHead", "ShiftedFeatures", "RobustUpsampler", "LogGammaPrior"}
    # erfinv and fmod kept as calls in the partial Linalg IR; every op of a module that lowers.
    quantile = seen["QuantileHead"]["linalg"]["ops"]
    assert quantile["rejected"] == 2 and quantile["total"] > 2
    shifted = seen["ShiftedFeatures"]
    assert shifted["linalg"]["ok"] and shifted["linalg"]["ops"]["rejected"] == 0
    assert shifted["linalg"]["ops"]["total"] > 10
    assert shifted["tosa"]["ops"]["rejected"] >= 3  # roll, atan2, scatter_add
    for targets in seen.values():
        for verdict in targets.values():
            ops = verdict.get("ops")
            assert ops is None or 0 <= ops["rejected"] <= ops["total"]

    merged = _run("merge", "shard1.json", "shard2.json", "--format", "json", "-o", "all.json",
                  cwd=tmp_path)
    assert merged.returncode == 1, merged.stderr
    assert _targets(json.loads((tmp_path / "all.json").read_text())) == seen

    # A shard written before the counts merges beside one with them; the page says so.
    for module in shards[1]["modules"]:
        for verdict in module["targets"].values():
            verdict.pop("ops", None)
    (tmp_path / "shard2.json").write_text(json.dumps(shards[1]))
    page = _run("merge", "shard1.json", "shard2.json", "--format", "html", "-o", "all.html",
                cwd=tmp_path)
    assert page.returncode == 1, page.stderr
    text = (tmp_path / "all.html").read_text()
    assert len(re.findall(r'aria-label="ops that lower: \d+%"', text)) == 3
    uncounted = len(shards[1]["modules"])
    assert f"({uncounted} module(s) not counted: no Linalg IR)" in text

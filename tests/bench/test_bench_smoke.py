"""Smoke run of the benchmark harness (`python -m bench.run --smoke`): tiny models, 1-2 repeats.

Checks the harness, not the product's speed: every figure of issue 5 produces a number for
each of its targets, and results.json / RESULTS.md are written. Verdicts may be FAIL here.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(600)
def test_bench_smoke(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--out", str(out),
         "--work", str(tmp_path / "work")],
        cwd=REPO, capture_output=True, text=True, timeout=590,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / "RESULTS.md").read_text().startswith("# Benchmark results")
    data = json.loads((out / "results.json").read_text())
    assert data["machine"]["cores"] >= 1
    figures = {f["number"]: f for f in data["figures"]}
    assert sorted(figures) == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    for number, fig in figures.items():
        assert fig["error"] is None, f"figure {number}: {fig['error']}\n{fig['details']}"
        targeted = [m for m in fig["metrics"] if m["target"] is not None]
        assert targeted, f"figure {number} has no targeted metric"
        for m in targeted:
            assert m["value"] is not None and not math.isnan(m["value"]), (number, m["name"])
            assert m["verdict"] in ("PASS", "FAIL"), (number, m)
    assert "figure" in proc.stdout and "verdict" in proc.stdout  # the table was printed

"""bench's results files across runs: a run of some figures replaces those and keeps the
others' last results (with the run they come from), in results.json and RESULTS.md alike."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from bench.report import FigureResult, Metric
from bench.results_file import write_results

MACHINE = {"cpu": "CPU", "cores": 2, "ram_gb": 8.0, "os": "Linux", "python": "3.11",
           "versions": {"torch": "2"}, "loadavg_at_start": [1.0, 1.0, 1.0]}
KNOWN = set(range(1, 11))


def figure(number: int, value: float) -> FigureResult:
    return FigureResult(number, f"Figure {number}", [
        Metric(f"ratio {number}", value, "x", 1.1),
        Metric("unmeasured", math.nan, "s", None)], {"models": number},
        method=f"Figure {number}.\n\nHow figure {number} is measured.")


def meta(command: str, mode: str = "full") -> dict[str, Any]:
    return {"machine": MACHINE, "mode": mode, "command": command, "total_seconds": 1.0,
            "loadavg_at_end": [1.0, 1.0, 1.0], "repeats": {"r": 1}}


def legacy_file(out: Path) -> None:
    """results.json as full runs wrote it before runs were recorded (figures 1, 2 and 9)."""
    data = {"date": "2026-11-30 20:03 UTC", **meta("python -m bench.run"),
            "figures": [figure(n, 0.5 + n / 10).to_json() for n in (1, 2, 9)],
            "notes": ["an old note"]}
    for f in data["figures"]:
        del f["method"]  # not recorded then: the figure module's docstring stands in
    (out / "results.json").write_text(json.dumps(data))


def test_a_run_of_one_figure_keeps_the_others_with_their_run(tmp_path: Path) -> None:
    legacy_file(tmp_path)
    write_results([figure(2, 2.0)], tmp_path, meta("python -m bench.run --only 2", "smoke"),
                  ["a new note"], known=KNOWN)
    data = json.loads((tmp_path / "results.json").read_text())
    assert [f["number"] for f in data["figures"]] == [1, 2, 9]
    by_number = {f["number"]: f for f in data["figures"]}
    assert by_number[2]["metrics"][0]["value"] == 2.0 and by_number[1]["metrics"][0][
        "value"] == 0.6
    new_run, old_run = data["runs"]
    assert (by_number[2]["run"], by_number[1]["run"], by_number[9]["run"]) == (
        new_run["id"], old_run["id"], old_run["id"])
    assert (old_run["command"], new_run["command"]) == ("python -m bench.run",
                                                        "python -m bench.run --only 2")
    assert data["command"] == "python -m bench.run --only 2" and data["mode"] == "smoke"

    md = (tmp_path / "RESULTS.md").read_text()
    assert "| 1. Figure 1 | ratio 1 | 0.600x |" in md and "| 2. Figure 2 | ratio 2 | 2.000x |" in md
    row1 = next(ln for ln in md.splitlines() if ln.startswith("| 1. Figure 1"))
    row2 = next(ln for ln in md.splitlines() if ln.startswith("| 2. Figure 2"))
    assert row1.endswith("| 2026-11-30 20:03 UTC |")
    assert row2.endswith(f"| {new_run['date']} (smoke) |")
    section1 = md.split("### 1. Figure 1", 1)[1].split("###", 1)[0]
    assert "Measured 2026-11-30 20:03 UTC with `python -m bench.run` (full run)." in section1
    # An older file had no method: the figure module's docstring describes figure 1.
    from bench.figures import fig1_overhead
    assert " ".join((fig1_overhead.__doc__ or "").split("\n", 1)[1].split()[:6]) in section1
    section2 = md.split("### 2. Figure 2", 1)[1].split("###", 1)[0]
    assert "`python -m bench.run --only 2` (smoke run)" in section2
    assert "How figure 2 is measured." in section2
    assert "- an old note" in md and "- a new note" in md

    # Measuring the other old figures too: the old run is cited no more and goes.
    write_results([figure(1, 1.0), figure(9, 1.0)], tmp_path, meta("python -m bench.run"),
                  [], known=KNOWN)
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["runs"]) == 2 and "2026-11-30 20:03 UTC" not in [r["id"] for r in
                                                                     data["runs"]]
    assert "2026-11-30" not in (tmp_path / "RESULTS.md").read_text()


def test_fresh_runs_and_retired_figures_drop_old_results(tmp_path: Path) -> None:
    legacy_file(tmp_path)
    write_results([figure(2, 2.0)], tmp_path, meta("x"), [], known={1, 2})  # 9 retired
    data = json.loads((tmp_path / "results.json").read_text())
    assert [f["number"] for f in data["figures"]] == [1, 2]
    write_results([figure(2, 3.0)], tmp_path, meta("x"), [], fresh=True, known=KNOWN)
    data = json.loads((tmp_path / "results.json").read_text())
    assert [f["number"] for f in data["figures"]] == [2] and len(data["runs"]) == 1
    assert "The figures of one run" in (tmp_path / "RESULTS.md").read_text()


def test_an_unreadable_results_file_is_started_over(tmp_path: Path, capsys: Any) -> None:
    (tmp_path / "results.json").write_text("{broken")
    write_results([figure(3, 1.0)], tmp_path, meta("x"), [], known=KNOWN)
    data = json.loads((tmp_path / "results.json").read_text())
    assert [f["number"] for f in data["figures"]] == [3]
    assert "not readable" in capsys.readouterr().err


def test_figures_round_trip_through_json() -> None:
    original = figure(4, 0.9)
    again = FigureResult.from_json(json.loads(json.dumps(original.to_json())))
    assert again.to_json() == original.to_json()
    assert math.isnan(again.metrics[1].value) and again.verdict == original.verdict

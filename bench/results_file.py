"""results.json and RESULTS.md: the last measurement of every figure, across runs.

A run of some figures (`--only 10`) replaces those figures' results and keeps the others' from
the runs that measured them last, so running one figure never drops the rest. Each figure
records the run it comes from (`"run"`: the run's id), and `runs` describes every run still
cited (date, command, mode, machine, load, repeats, notes); RESULTS.md says per figure when
and how it was measured. `--fresh` starts over with only this run's figures. The top-level
`date`, `machine`, `mode`, `command`, ... are those of the latest run.
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any

from bench.report import FigureResult, markdown_table, scrub

JSON_NAME = "results.json"
MD_NAME = "RESULTS.md"
_RUN_KEYS = ("date", "command", "mode", "machine", "total_seconds", "loadavg_at_end", "repeats")


def _legacy_runs(data: dict[str, Any]) -> dict[str, Any]:
    """A results.json from before runs were recorded: one run, every figure from it."""
    run_id = str(data.get("date", "earlier run"))
    run = {k: data[k] for k in _RUN_KEYS if k in data}
    run.update(id=run_id, notes=list(data.get("notes", [])))
    figures = [{**f, "run": run_id} for f in data.get("figures", [])]
    return {"runs": [run], "figures": figures}


def read_previous(path: Path) -> dict[str, Any] | None:
    """The results file at `path` as runs and figures, or None (absent or unreadable: then
    a warning, and this run starts the file over)."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("figures"), list):
            raise ValueError("no figures list")
    except (OSError, ValueError) as exc:
        print(f"[bench] {path.name}: not readable ({exc}); writing this run's figures only",
              file=sys.stderr)
        return None
    if not isinstance(data.get("runs"), list):
        return _legacy_runs(data)
    return {"runs": data["runs"], "figures": data["figures"]}


def merge(previous: dict[str, Any] | None, run: dict[str, Any],
          figures: list[dict[str, Any]], known: set[int] | None = None) -> dict[str, Any]:
    """This run's figures, plus the previous figures it did not measure (and that still exist:
    `known` numbers), in figure order; the runs they cite, latest first."""
    taken = {r.get("id") for r in (previous or {}).get("runs", [])}
    base, n = run["id"], 1
    while run["id"] in taken:  # two runs within a second: still two runs
        n += 1
        run = {**run, "id": f"{base}-{n}"}
    fresh = {f["number"]: {**f, "run": run["id"]} for f in figures}
    kept: dict[int, dict[str, Any]] = {}
    for f in (previous or {}).get("figures", []):
        number = f.get("number")
        if number not in fresh and (known is None or number in known):
            kept[number] = f
    both = {**kept, **fresh}
    merged = [both[n] for n in sorted(both)]
    cited = {f["run"] for f in merged}
    runs = [run, *(r for r in (previous or {}).get("runs", []) if r.get("id") in cited)]
    return {**{k: run[k] for k in _RUN_KEYS if k in run}, "runs": runs, "figures": merged,
            "notes": run.get("notes", [])}


def _when(run: dict[str, Any]) -> str:
    """When a figure was measured, for its table row (the mode unless a full run)."""
    mode = run.get("mode")
    return str(run.get("date", "?")) + ("" if mode in (None, "full") else f" ({mode})")


def _run_line(run: dict[str, Any], numbers: list[int]) -> str:
    which = "figure" if len(numbers) == 1 else "figures"
    m = run.get("machine", {})
    return (f"- {run.get('date')}, `{run.get('command', 'make bench')}` ({run.get('mode')}): "
            f"{which} {', '.join(map(str, numbers))}; load average {m.get('loadavg_at_start')} "
            f"at start, {run.get('loadavg_at_end')} at end; total {run.get('total_seconds')} s; "
            f"repeats {run.get('repeats')}")


def _machine_lines(runs: list[dict[str, Any]]) -> list[str]:
    """The machine and software, once if every run shares them, else per run."""
    def describe(m: dict[str, Any]) -> list[str]:
        v = m.get("versions", {})
        return [f"Machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('ram_gb')} GB RAM, "
                f"{m.get('os')}",
                f"Python {m.get('python')}, torch {v.get('torch')}, torch-mlir "
                f"{v.get('torch-mlir')}, pygls {v.get('pygls')}, torch-mlir-lens "
                f"{v.get('torch-mlir-lens')}"]

    seen = {json.dumps(describe(r.get("machine", {}))) for r in runs}
    if len(seen) == 1:
        return [f"- {line}" for line in describe(runs[0].get("machine", {}))]
    return [f"- {r.get('date')}: " + "; ".join(describe(r.get("machine", {}))) for r in runs]


def markdown(data: dict[str, Any]) -> str:
    """RESULTS.md of merged results: every figure's last measurement, and when it was taken."""
    runs = {r["id"]: r for r in data["runs"]}
    figures = [FigureResult.from_json(f) for f in data["figures"]]
    run_of = {f["number"]: runs.get(f["run"], {}) for f in data["figures"]}
    numbers = {rid: [f["number"] for f in data["figures"] if f["run"] == rid] for rid in runs}
    if len(runs) == 1:
        intro = "The figures of one run:"
    else:
        intro = (f"The figures come from {len(runs)} runs: a run of some figures (`--only`) "
                 "replaces those and keeps the others' last results. Compare ratios within a "
                 "figure, not times across runs.")
    md = ["# Benchmark results", "", intro, "",
          *[_run_line(r, numbers[r["id"]]) for r in data["runs"]],
          *_machine_lines(data["runs"]), "",
          "Ratios compare runs interleaved in the same run; absolute times vary with the "
          "machine's load, ratios much less. Why figures fell short, and what fixed them: "
          "[DIAGNOSES.md](DIAGNOSES.md).", "",
          markdown_table(figures, measured={n: _when(r) for n, r in run_of.items()}), ""]
    notes = list(dict.fromkeys(n for r in data["runs"] for n in r.get("notes", [])))
    if notes:
        md += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    md += ["## Per figure", ""]
    for f in figures:
        run = run_of[f.number]
        md += [f"### {f.number}. {f.title} — {f.verdict}", "",
               f"Measured {run.get('date')} with `{run.get('command', 'make bench')}` "
               f"({run.get('mode')} run).", ""]
        md += f.markdown_body()
    return "\n".join(md)


def write_results(figures: list[FigureResult], out_dir: Path, meta: dict[str, Any],
                  notes: list[str], *, fresh: bool = False,
                  known: set[int] | None = None) -> tuple[Path, Path]:
    """Merge this run's figures into results.json and RESULTS.md in `out_dir` (only them
    with `fresh`); return both paths."""
    now = _dt.datetime.now(_dt.UTC)
    run = {"id": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
           "date": now.strftime("%Y-%m-%d %H:%M UTC"), **meta, "notes": notes}
    jpath, mpath = out_dir / JSON_NAME, out_dir / MD_NAME
    previous = None if fresh else read_previous(jpath)
    data = merge(previous, run, [f.to_json() for f in figures], known)
    jpath.write_text(scrub(json.dumps(data, indent=2) + "\n"))
    mpath.write_text(scrub(markdown(data)))
    return jpath, mpath

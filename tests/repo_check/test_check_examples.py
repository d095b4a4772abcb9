"""`check examples/ -j 2 --format sarif`, a baseline from it, two shards against it: real CLI.

One full run over a copy of the examples writes the SARIF report and the baseline; the two
shards then run side by side with that baseline (together: one more full run) and are merged.
What the reports must contain is derived from the examples themselves (their docstrings and
the editor's discovery), not written down here.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from torch_mlir_lens.discovery import find_modules

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
TIMEOUT = 900  # a full run over the examples on a busy 2-core machine
BACKENDS = ("linalg", "tosa", "stablehlo")
FAILING = ("examples/unsupported_ops.py", "examples/export_failures.py", "examples/functions.py",
           "examples/partial_lowering.py")
pytestmark = pytest.mark.timeout(1200)  # the module fixture: two runs over many modules


def cli(*args: str, cwd: Path) -> list[str]:
    return [sys.executable, "-m", "torch_mlir_lens", *args]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli(*args, cwd=cwd), cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT)


def assert_valid_sarif(log: dict[str, Any]) -> None:
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(log), key=str)
    assert not errors, [f"{list(e.path)}: {e.message[:200]}" for e in errors[:5]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("examples-check")
    shutil.copytree(ROOT / "examples", work / "examples",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # Baselines, shards and formats are under test here, not rewrites (test_check_rewrites.py):
    # no proofs, which would double the time of the failing files.
    full = run("check", "examples", "-j", "2", "--format", "sarif", "-o", "full.sarif",
               "--write-baseline", "--baseline", "baseline.json", "--memory-limit", "2000",
               "--rewrites", "off", cwd=work)
    # The next run, in two shards side by side: over the files with findings (the others
    # pass with or without a baseline); the split of all examples is checked with --list.
    shards = [subprocess.Popen(
        cli("check", *FAILING, "--shard", f"{i}/2", "-j", "1", "--baseline", "baseline.json",
            "--format", "json", "-o", f"shard{i}.json", "--memory-limit", "2000",
            "--rewrites", "off", cwd=work),
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in (1, 2)]
    outs = [p.communicate(timeout=TIMEOUT) for p in shards]
    return {"work": work, "full": full, "shards": [(p.returncode, *o) for p, o in
                                                   zip(shards, outs, strict=True)]}


@pytest.fixture(scope="module")
def sarif(runs: dict[str, Any]) -> dict[str, Any]:
    full = runs["full"]
    assert full.returncode == 0, full.stderr[-3000:]  # --write-baseline: 0 once written
    return json.loads((runs["work"] / "full.sarif").read_text())


def discovered(work: Path) -> dict[str, list[Any]]:
    """The editor's view of every example file: relative path → its modules."""
    out = {}
    for path in sorted((work / "examples").rglob("*.py")):
        rel = path.relative_to(work).as_posix()
        out[rel] = find_modules(path.read_text(), str(path))
    return out


def test_sarif_is_valid_and_reports_every_module(runs: dict[str, Any],
                                                 sarif: dict[str, Any]) -> None:
    assert_valid_sarif(sarif)
    (run_,) = sarif["runs"]
    expected = sorted(f"{rel}::{m.name}" for rel, mods in discovered(runs["work"]).items()
                      for m in mods)
    assert sorted(run_["properties"]["torchMlirLens"]["modules"]) == expected
    notes = {n["message"]["text"].split(" ")[0]
             for n in run_["invocations"][0]["toolExecutionNotifications"]}
    missing = {m.name for mods in discovered(runs["work"]).values() for m in mods
               if m.inputs == "missing"}
    assert missing and notes == missing
    rule_ids = {r["id"] for r in run_["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in run_["results"]} == rule_ids


def _table(doc: str) -> dict[str, dict[str, list[str]]]:
    """The docstring table of unsupported_ops.py: module → backend → op names."""
    table: dict[str, dict[str, list[str]]] = {}
    for line in doc.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) < 2 or not re.match(r"^[A-Z]\w+$", cells[0]) or cells[0] == "module":
            continue
        if "all backends" in line:
            ops = re.findall(r"(\w+)(?=[,:])", cells[1])
            table[cells[0]] = {b: ops for b in BACKENDS}
        else:
            table[cells[0]] = {b: [o.strip() for o in cell.split(",") if o.strip() != "ok"]
                               for b, cell in zip(BACKENDS, cells[1:], strict=True)}
    return table


def _where(results: list[dict[str, Any]]) -> set[tuple[str, str, int, str]]:
    out = set()
    for r in results:
        loc = r["locations"][0]
        out.add((r["ruleId"].split("/")[0], loc["physicalLocation"]["artifactLocation"]["uri"],
                 loc["physicalLocation"]["region"]["startLine"],
                 loc["logicalLocations"][0]["name"]))
    return out


def test_every_unsupported_op_of_the_examples_is_a_result_at_its_line(
        runs: dict[str, Any], sarif: dict[str, Any]) -> None:
    path = runs["work"] / "examples" / "unsupported_ops.py"
    text = path.read_text()
    tree = ast.parse(text)
    table = _table(ast.get_docstring(tree) or "")
    assert set(table) == {"QuantileHead", "ShiftedFeatures", "RobustUpsampler", "LogGammaPrior"}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    lines = text.splitlines()
    got = _where(sarif["runs"][0]["results"])
    expected = set()
    for module, per_backend in table.items():
        node = classes[module]
        for backend, ops in per_backend.items():
            for op in ops:
                at = [i + 1 for i in range(node.lineno - 1, node.end_lineno or 0)
                      if re.search(rf"\.{op}\(", lines[i])]
                assert len(at) == 1, (module, op)
                expected.add((backend, "examples/unsupported_ops.py", at[0], module))
    assert len(expected) == 20
    assert expected <= got, sorted(expected - got)


def test_export_failures_are_results_at_their_lines(runs: dict[str, Any],
                                                    sarif: dict[str, Any]) -> None:
    path = runs["work"] / "examples" / "export_failures.py"
    tree = ast.parse(path.read_text())
    named = re.findall(r"^\s{4}(\w+)\s{2,}", ast.get_docstring(tree) or "", re.M)
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "export-error"]
    by_module = {r["locations"][0]["logicalLocations"][0]["name"]: r for r in results}
    assert set(named) <= set(by_module) and len(named) == 4
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in named:
            forward = next(f for f in node.body if isinstance(f, ast.FunctionDef)
                           and f.name == "forward")
            line = by_module[node.name]["locations"][0]["physicalLocation"]["region"][
                "startLine"]
            assert forward.lineno < line <= (forward.end_lineno or 0), node.name


def test_a_baseline_from_the_run_makes_the_next_run_pass(runs: dict[str, Any],
                                                         sarif: dict[str, Any]) -> None:
    baseline = json.loads((runs["work"] / "baseline.json").read_text())
    keys = {(e["file"], e["module"], e["rule"]) for e in baseline["entries"]}
    results = sarif["runs"][0]["results"]
    assert len(keys) == len({(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                              r["locations"][0]["logicalLocations"][0]["name"], r["ruleId"])
                             for r in results}) > 0
    for i, (code, out, err) in enumerate(runs["shards"], start=1):
        assert code == 0, (out[-2000:], err[-3000:])
        report = json.loads(Path(runs["work"], f"shard{i}.json").read_text())
        assert report["summary"]["new"] == 0 and report["summary"]["baselined"] > 0


def test_two_shards_cover_every_module_exactly_once(runs: dict[str, Any],
                                                    sarif: dict[str, Any]) -> None:
    work = runs["work"]
    listed = [run("check", "examples", "--shard", f"{i}/2", "--list", cwd=work)
              for i in (1, 2)]
    names = [p.stdout.split() for p in listed]
    assert all(p.returncode == 0 for p in listed) and all(names)
    assert not set(names[0]) & set(names[1]) and abs(len(names[0]) - len(names[1])) <= 1
    assert sorted(names[0] + names[1]) == sorted(
        sarif["runs"][0]["properties"]["torchMlirLens"]["modules"])

    parts = [json.loads((work / f"shard{i}.json").read_text()) for i in (1, 2)]
    names = [[f"{m['file']}::{m['name']}" for m in p["modules"]] for p in parts]
    assert all(names) and not set(names[0]) & set(names[1])
    assert sorted(names[0] + names[1]) == sorted(
        m for m in sarif["runs"][0]["properties"]["torchMlirLens"]["modules"]
        if m.split("::")[0] in FAILING)

    merged = run("merge", "shard1.json", "shard2.json", "--format", "sarif", "-o", "m.sarif",
                 cwd=work)
    assert merged.returncode == 0, merged.stderr
    log = json.loads((work / "m.sarif").read_text())
    assert_valid_sarif(log)
    results = log["runs"][0]["results"]
    assert len(results) == len(sarif["runs"][0]["results"])  # every finding is in FAILING
    assert {r["baselineState"] for r in results} == {"unchanged"}

    incomplete = run("merge", "shard2.json", cwd=work)
    assert incomplete.returncode == 2
    assert "missing shards [1] of 2" in incomplete.stderr

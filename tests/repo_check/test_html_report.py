"""`check --format html`: the JSON report rendered as one self-contained page (charts as inline
SVG, culprits ranked by the modules they block, each module's verdicts linked to its lines,
what changed since the baseline), under a policy that runs no script and fetches nothing."""

from __future__ import annotations

import re
from typing import Any

from torch_mlir_lens.repo_check.outputs import FORMATS, render
from torch_mlir_lens.repo_check.report import Report


def _module(name: str, line: int, tosa: list[dict[str, Any]],
            ops: int | None = 20) -> dict[str, Any]:
    """A module's entry; `ops`: the ops of its TOSA IR (None: a report from before counts)."""
    ok = {"ok": True, "unsupported": [], "error": None, "error_line": None,
          "ops": {"total": 20, "rejected": 0}}
    counts = {"ops": {"total": ops, "rejected": len(tosa)}} if ops is not None else {}
    findings = [{"rule": f"tosa/{u['op']}", "kind": "unsupported-op",
                 "message": f"`{u['op']}` cannot be lowered to TOSA", "file": "m.py",
                 "line": u["line"], "module_file": "m.py", "module": name, "module_line": line,
                 "target": "tosa", "op": u["op"], "baselined": False} for u in tosa]
    return {"file": "m.py", "name": name, "line": line,
            "targets": {"linalg": ok, "tosa": {**{k: v for k, v in ok.items() if k != "ops"},
                                               "ok": not tosa, "unsupported": tosa, **counts}},
            "findings": findings}


def _report() -> Report:
    roll = {"op": "aten.roll", "line": 5, "cause": "`torch.roll`",
            "rewrite": {"spec": "roll@tosa", "verify": "✓ matches eager"}}
    atan = {"op": "aten.atan2", "line": 12, "cause": "`aten.atan2`",
            "rewrite": {"rewrites": [], "why": "no candidate passes its proof"}}
    report = Report(targets=["linalg", "tosa"], modules=[
        _module("A", 1, [roll]), _module("B", 8, [{**roll, "line": 9}, atan], ops=30),
        _module("C", 20, [], ops=None)])
    report.baseline, report.fixed = "baseline.json", [["old.py", "Old", "tosa/aten.erf"]]
    return report


def test_html_is_a_format_check_and_merge_offer() -> None:
    assert "html" in FORMATS


def test_the_page_charts_ranks_links_and_compares() -> None:
    text = render(_report(), "html", ".")
    assert text.startswith("<!DOCTYPE html>")
    # Per backend: the share of modules that lower, as a chart (3 of 3 Linalg, 1 of 3 TOSA).
    assert re.search(r'data-target="linalg".*?aria-label="modules that lower: 100%"', text, re.S)
    assert re.search(r'data-target="tosa".*?aria-label="modules that lower: 33%"', text, re.S)
    assert 'aria-label="rejected ops with a proven rewrite: 67%"' in text
    # ... and of the ops of each backend's IR that lower: 60 of 60 Linalg; 47 of TOSA's 50 in
    # the two modules counted (C's verdict, as a report from before the counts, has none).
    assert re.search(r'data-target="linalg".*?aria-label="ops that lower: 100%"', text, re.S)
    assert re.search(r'data-target="tosa".*?aria-label="ops that lower: 94%"', text, re.S)
    assert "47 of 50 ops lower (3 left unlowered) (1 module(s) not counted: no TOSA IR)" in text
    # Culprits ranked by the modules they block: roll (A, B) before atan2 (B).
    rows = re.findall(r"<tr><td>(\d+)</td><td>TOSA</td><td><code>([^<]+)</code>", text)
    assert rows == [("2", "`torch.roll`"), ("1", "`aten.atan2`")]
    assert "✓ roll@tosa: ✓ matches eager" in text and "no candidate passes its proof" in text
    # Source lines are links; the baseline's new and fixed findings are listed.
    assert '<a href="m.py#L12">m.py:12</a>' in text
    assert "New (3)" in text and "Fixed (1)" in text and "old.py · Old · tosa/aten.erf" in text


def test_the_page_runs_no_script_and_fetches_nothing() -> None:
    text = render(_report(), "html", ".")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert policy is not None
    assert "default-src &#x27;none&#x27;" in policy.group(1)
    assert "script-src &#x27;none&#x27;" in policy.group(1)
    assert "<script" not in text
    assert not re.search(r"(src|href)=\"(https?:)?//", text)


def test_module_names_and_messages_are_escaped() -> None:
    report = _report()
    report.modules[0]["name"] = "<img src=x onerror=alert(1)>"
    assert "<img src=x" not in render(report, "html", ".")

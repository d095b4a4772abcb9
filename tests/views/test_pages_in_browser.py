"""The self-contained pages as a person sees them: `torch-mlir-lens graph -o graph.html` and
`check --format html` opened in headless Chromium (tests/views/page_check.mjs), with no script
error, nothing fetched, the graph drawn with its verdict colours and a node's details on a
click, the report's charts drawn. Needs the e2e set-up (`make e2e-deps`) and the built page
script (`make client`); skipped, with the reason, without them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.repo_check.test_html_report import _report

from torch_mlir_lens.repo_check.outputs import render

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("TML_E2E_CACHE", ROOT / ".cache" / "vscode-e2e"))
MODELS = ROOT / "tests" / "worker" / "models" / "graph_models.py"

pytestmark = pytest.mark.timeout(240)


def _browser(page: Path, click: str | None = None) -> dict[str, Any]:
    chromium = Path(os.environ.get("TML_CHROMIUM", "/usr/bin/chromium"))
    missing = [what for what, ok in (
        ("playwright-core (make e2e-deps)",
         (CACHE / "pw" / "node_modules" / "playwright-core").exists()),
        ("chromium (make e2e-deps)", chromium.exists()),
        ("node", shutil.which("node") is not None)) if not ok]
    if missing:
        pytest.skip("missing: " + ", ".join(missing))
    args = ["node", str(ROOT / "tests" / "views" / "page_check.mjs"), str(page)]
    proc = subprocess.run(args + ([click] if click else []), capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_graph_page_draws_verdicts_and_shows_a_node(tmp_path: Path) -> None:
    out = tmp_path / "graph.html"
    proc = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "graph", str(MODELS), "--module", "Rejected",
         "--targets", "tosa", "-o", str(out)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    seen = _browser(out, "erfinv")
    assert seen["errors"] == [] and seen["requests"] == []
    assert seen["boxes"] >= 8
    assert "rejected" in seen["statuses"] and "lowered" in seen["statuses"]
    assert "aten.erfinv" in seen["details"] and "cannot be lowered to TOSA" in seen["details"]
    assert "torch.aten.erfinv" in seen["details"]  # its Torch IR line


def test_the_coverage_report_draws_its_charts(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text(render(_report(), "html", "."), encoding="utf-8")
    seen = _browser(out)
    assert seen["errors"] == [] and seen["requests"] == []
    assert seen["charts"] == 4  # two per backend

"""The self-contained pages as a person sees them: `torch-mlir-lens graph -o graph.html` and
`check --format html` opened in headless Chromium (tests/views/page_check.mjs), with no script
error, nothing fetched, the graph drawn with its verdict colours and a node's details on a
click, Verify's mismatch on the ops of the first diverging line, "Expand all" on a ResNet-50's
depth drawing every op inside its groups' frames, the report's charts drawn. Needs the e2e
set-up (`make e2e-deps`) and the built page script (`make client`); skipped, with the reason,
without them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_graph_cli import NOISY
from tests.repo_check.test_html_report import _report

from torch_mlir_lens.repo_check.outputs import render

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("TML_E2E_CACHE", ROOT / ".cache" / "vscode-e2e"))
MODELS = ROOT / "tests" / "worker" / "models" / "graph_models.py"

pytestmark = pytest.mark.timeout(240)


def _browser(page: Path, click: str | None = None, *more: str) -> dict[str, Any]:
    chromium = Path(os.environ.get("TML_CHROMIUM", "/usr/bin/chromium"))
    missing = [what for what, ok in (
        ("playwright-core (make e2e-deps)",
         (CACHE / "pw" / "node_modules" / "playwright-core").exists()),
        ("chromium (make e2e-deps)", chromium.exists()),
        ("node", shutil.which("node") is not None)) if not ok]
    if missing:
        pytest.skip("missing: " + ", ".join(missing))
    args = ["node", str(ROOT / "tests" / "views" / "page_check.mjs"), str(page)]
    proc = subprocess.run(args + ([click, *more] if click else []), capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
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


def _page(tmp_path: Path, source: Path, module: str, *args: str) -> Path:
    out = tmp_path / "graph.html"
    proc = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "graph", str(source), "--module", module,
         "--targets", "linalg", *args, "-o", str(out)], capture_output=True, text=True,
        timeout=180)
    assert proc.returncode == 0, proc.stderr
    return out


def test_verify_s_mismatch_is_drawn_on_the_diverging_line_s_ops(tmp_path: Path) -> None:
    source = tmp_path / "noisy.py"
    source.write_text(NOISY)
    seen = _browser(_page(tmp_path, source, "Noisy", "--verify"), "add")
    assert seen["errors"] == [] and seen["requests"] == []
    assert sorted(seen["verified"]) == ["add", "rand_like"]
    assert "Verify: ✗ differs" in seen["header"]
    assert "compiled values first differ from eager here" in seen["details"]
    assert "this op's value was the one compared" in seen["details"]


def test_expand_all_draws_a_resnet_50_s_depth_inside_its_frames(tmp_path: Path) -> None:
    seen = _browser(_page(tmp_path, MODELS, "ResNet50Shape"), "-", "expand")
    assert seen["errors"] == [] and seen["requests"] == []
    expanded = seen["expanded"]
    # Every op drawn (its 1,076 are under the budget), each inside the frames of its groups.
    assert expanded["boxes"] > 1000 and "left collapsed" not in expanded["status"]
    assert expanded["frames"] > 200 and expanded["edges"] > 500
    assert expanded["outside"] == []


def test_an_onnx_model_s_graph_page(tmp_path: Path) -> None:
    """`graph model.onnx -o graph.html`: the model's nodes drawn with their verdicts, a
    clicked node's details naming why the backend rejects it."""
    from tests.worker.models import onnx_models

    model = onnx_models.chain(tmp_path, "FastGelu", domain="com.microsoft")
    out = tmp_path / "graph.html"
    proc = subprocess.run(
        [sys.executable, "-m", "torch_mlir_lens", "graph", str(model), "--targets", "tosa",
         "-o", str(out)], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    seen = _browser(out, "n2")
    assert seen["errors"] == [] and seen["requests"] == []
    assert seen["boxes"] >= 5  # three nodes, the input, the output
    assert {"rejected", "lowered", "knock-on"} <= set(seen["statuses"])
    assert "com.microsoft.FastGelu" in seen["details"]
    assert "torch-mlir has no conversion of" in seen["details"]


def test_the_coverage_report_draws_its_charts(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text(render(_report(), "html", "."), encoding="utf-8")
    seen = _browser(out)
    assert seen["errors"] == [] and seen["requests"] == []
    assert seen["charts"] == 6  # three per backend: modules, ops, rewrites

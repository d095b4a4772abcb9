"""Notebooks in a real VS Code (code-server + headless Chromium) with the packaged extension and
the real server, no kernel: tests/notebooks/spread_model.ipynb shows the "Show Linalg IR" lens
in the model's cell, the Linalg pane with linalg. ops, the cursor in a cell lighting up its IR,
a hover with MLIR on a cell line, a squiggle in the helper block's cell, and Ctrl-click on an
op revealing its cell; the training cell never runs. Driven by tests/e2e/notebook/driver.mjs;
screenshots and logs go to test-artifacts/e2e-notebook/.

Needs the same as test_vscode_e2e.py (`make e2e-deps`, `make vsix`, the built suite); skipped,
with the reason, when they are missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_vscode_e2e import _missing

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "test-artifacts" / "e2e-notebook" / "result.json"

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(480)]

UI_STEPS = ("open", "lens", "pane", "highlight", "hover", "squiggle", "reveal")
SUITE_CHECKS = ("activated", "cellLenses", "cellHover", "cellDiagnostics", "paneDefinition")
SHOTS = ("nb-01-lens", "nb-02-pane", "nb-03-highlight", "nb-04-hover", "nb-05-squiggle",
         "nb-06-reveal")


def test_notebook_in_real_vscode() -> None:
    missing = _missing()
    if not (ROOT / "out" / "e2e" / "notebook" / "suite.js").exists():
        missing.append("the built notebook e2e suite (run `make client`)")
    if missing:
        pytest.skip("e2e prerequisites missing: " + ", ".join(missing))
    env = dict(os.environ)
    env.setdefault("TML_PYTHON", sys.executable)
    proc = subprocess.run(
        ["node", str(ROOT / "tests" / "e2e" / "notebook" / "driver.mjs")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=460,
    )
    log = proc.stdout[-6000:] + proc.stderr[-3000:]
    assert RESULT.exists(), f"the driver wrote no result\n{log}"
    result = json.loads(RESULT.read_text())
    for name in UI_STEPS:
        step = result.get("steps", {}).get(name, {})
        assert step.get("ok"), f"UI step {name!r} failed: {step}\n{log}"
    suite = result.get("suite") or {}
    for name in SUITE_CHECKS:
        assert suite.get(name, {}).get("ok"), f"in-editor check {name!r} failed: {suite.get(name)}"
    assert result.get("suiteExit") == 0, log
    assert result.get("trainingRan") is False, "the training cell ran"
    for shot in SHOTS:
        assert (RESULT.parent / f"{shot}.png").stat().st_size > 10_000, f"screenshot {shot} missing"
    assert proc.returncode == 0, log

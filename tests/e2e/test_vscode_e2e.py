"""The packaged VS Code extension in a real VS Code (code-server + headless Chromium), against the
real language server: lenses, the Linalg pane with the cursor's line highlighted in it, a hover with
MLIR, colour bands, a squiggle with its message, the export dialog (writes, asks before
overwriting), the graph view (a clicked node selects its line and scrolls it into view, the cursor
on a line lights its node); trust granted mid-start many times; a three-folder workspace whose
folders have their own interpreters and settings (two lower with their own venvs, one lacks the
server), plus a file outside them; the Python extension's interpreter changes (through a test-only
stand-in of its published API): a burst restarts only that folder's server, once, and the
`torchMlirLens.python` setting still wins; a notebook with its model spread over cells (lens, pane,
highlight, hover and squiggle in cells, Ctrl-click revealing a cell, its training cell never run);
an .onnx file in its model view (each node's verdict per backend, the Linalg pane linked to the node
rows both ways, the rejected node in Problems, its graph view linked to the rows) and IREE CPU
diagnosed (its verdict lens, a hover naming the dispatch, the heat band of a profile); then
workspace trust in the UI: restricted until trusted, and IR after trusting without a reload.
Highlights and hovers are read from the extension's own test report and the hover widget, not from
VS Code's internal CSS. Driven by tests/e2e/driver.mjs; screenshots and logs go to test-
artifacts/e2e/.

Needs `bash tests/e2e/setup.sh` (make e2e-deps) and the .vsix (make vsix); `make test` does both
first. Skipped, with the reason, when they are missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("TML_E2E_CACHE", ROOT / ".cache" / "vscode-e2e"))
RESULT = ROOT / "test-artifacts" / "e2e" / "result.json"

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(660)]

UI_STEPS = [
    *(
        f"main.{s}"
        for s in ("lenses", "pane", "highlight", "hover", "bands", "squiggle", "exportDialog",
                  "graph", "viaOnnx")
    ),
    *(f"multiRoot.{s}" for s in ("alphaFolder", "betaMissing", "alphaUnaffected", "gammaFolder")),
    *(
        f"notebook.{s}"
        for s in ("nbOpen", "nbLens", "nbPane", "nbHighlight", "nbHover", "nbSquiggle", "nbReveal")
    ),
    *(f"onnx.{s}" for s in ("ireeLens", "onnxEditor", "onnxPane", "onnxProblems",
                            "onnxGraph")),
    "trust.untrusted",
    "trust.trusted",
]
SUITE_STEPS = {
    "main": (
        "activated",
        "lenses",
        "hover",
        "paneDefinition",
        "passPane",
        "diagnostics",
        "refreshOnSave",
        "trustRace",
    ),
    "multiRoot": (
        "workspaceFolders",
        "alphaOwnSettings",
        "betaMissingServer",
        "outsideDefaultServer",
        "gammaOwnInterpreter",
        "interpreterChange",
        "settingWins",
        "folderRemoved",
    ),
    "notebook": ("activated", "cellLenses", "cellHover", "cellDiagnostics", "paneDefinition"),
}
SHOTS = (
    "01-lenses",
    "02-pane-highlight",
    "03-hover",
    "04-bands",
    "05-squiggle",
    "06a-export-dialog",
    "06b-export-overwrite-question",
    "06c-via-onnx",
    "06-untrusted",
    "07-trusted",
    "08-server-missing",
    "09-multiroot-alpha",
    "10-multiroot-alpha-hover",
    "11-multiroot-gamma",
    "12-graph",
    "13-onnx-model",
    "14-onnx-pane",
    "15-onnx-problems",
    "16-iree-heat",
    "17-onnx-graph",
    *(f"nb-0{i}-{name}" for i, name in enumerate(
        ("lens", "pane", "highlight", "hover", "squiggle", "reveal"), start=1)),
)


def _version() -> str:
    return json.loads((ROOT / "package.json").read_text())["version"]


def _missing() -> list[str]:
    missing = []
    if not (CACHE / "cs" / "node_modules" / ".bin" / "code-server").exists():
        missing.append("code-server (run `make e2e-deps`)")
    if not (CACHE / "pw" / "node_modules" / "playwright-core").exists():
        missing.append("playwright-core (run `make e2e-deps`)")
    if not Path(os.environ.get("TML_CHROMIUM", "/usr/bin/chromium")).exists():
        missing.append("chromium (run `make e2e-deps`)")
    if not (ROOT / f"torch-mlir-lens-{_version()}.vsix").exists():
        missing.append("the .vsix (run `make vsix`)")
    if not (ROOT / "out" / "e2e" / "suite" / "index.js").exists():
        missing.append("the built e2e suite (run `make client`)")
    if shutil.which("node") is None:
        missing.append("node")
    return missing


def test_extension_in_real_vscode() -> None:
    missing = _missing()
    if missing:
        pytest.skip("e2e prerequisites missing: " + ", ".join(missing))
    env = dict(os.environ)
    # The server runs in the interpreter running this test (the project's venv).
    env.setdefault("TML_PYTHON", sys.executable)
    proc = subprocess.run(
        ["node", str(ROOT / "tests" / "e2e" / "driver.mjs")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=640,
    )
    log = proc.stdout[-12000:] + proc.stderr[-3000:]
    assert RESULT.exists(), f"the driver wrote no result\n{log}"
    result = json.loads(RESULT.read_text())
    # Every failure at once (a UI step that times out is often explained by an in-editor one).
    steps = result.get("steps", {})
    failures = [f"UI step {name}: {steps.get(name)}" for name in UI_STEPS
                if not steps.get(name, {}).get("ok")]
    suites = result.get("suites") or {}
    for suite, names in SUITE_STEPS.items():
        checks = suites.get(suite) or {}
        failures += [f"in-editor check {suite}.{name}: {checks.get(name)}" for name in names
                     if not (checks.get(name) or {}).get("ok")]
        exit_code = (result.get("suiteExit") or {}).get(suite)
        if exit_code != 0:
            failures.append(f"in-editor suite {suite}: exit code {exit_code}")
    assert not failures, "\n".join(failures) + f"\n{log}"
    assert result.get("trainingRan") is False, "the notebook's training cell ran"
    for shot in (f"{s}.png" for s in SHOTS):
        assert (RESULT.parent / shot).stat().st_size > 10_000, f"screenshot {shot} missing or empty"
    assert proc.returncode == 0, log

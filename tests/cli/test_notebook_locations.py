"""The CLI on a Jupyter notebook with a module spread over cells (tests/notebooks): imports in
one cell, a helper block in an earlier cell, the model later, a training cell after it that
must never run (it would write a marker file and raise), and `example_inputs()` in the last
cell. Locations read `NOTEBOOK.ipynb:CELL:LINE`; `--json` carries `cell` beside each line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_cli import assert_one_line_error, run_cli

FIXTURE = Path(__file__).parents[1] / "notebooks" / "spread_model.ipynb"
MARKER = "training-ran.marker"


@pytest.fixture(scope="module")
def nb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("nb")
    shutil.copy(FIXTURE, folder / FIXTURE.name)
    return folder


@pytest.fixture(autouse=True)
def training_never_runs(nb_dir: Path):
    yield
    assert not (nb_dir / MARKER).exists(), "the training cell ran"



def test_lower_json_maps_ir_to_cells(nb_dir: Path) -> None:
    proc = run_cli("lower", FIXTURE.name, "--module", "Model", "--json", cwd=nb_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert "linalg.matmul" in result["ir"]
    here = [m for m in result["map"] if m["file"].endswith(FIXTURE.name)]
    cells = {(m["cell"], m["line"]) for m in here}
    assert (3, 9) in cells   # the helper block's `torch.relu(self.fc(x))`, cell 3
    assert (5, 10) in cells  # the model's `return self.head(x)`, cell 5
    assert all(m["cell"] in (3, 5) for m in here)


def test_annotate_writes_cell_lines(nb_dir: Path) -> None:
    proc = run_cli("lower", FIXTURE.name, "--module", "Model", "--annotate", cwd=nb_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "3:9 │         h = torch.relu(self.fc(x))" in proc.stdout
    assert "5:10 │         return self.head(x)" in proc.stdout


def test_check_reports_cell_lines(nb_dir: Path) -> None:
    proc = run_cli("check", FIXTURE.name, cwd=nb_dir)
    assert proc.returncode == 1, proc.stderr[-2000:]  # TOSA cannot take atan2
    out = proc.stdout
    assert "Model (cell 5 line 2): linalg ok, tosa 1 unsupported, stablehlo ok" in out
    assert "tosa: `aten.atan2` at cell 3 line 10" in out
    # Inputs from `example_inputs()` in the last cell, after the training cell.
    assert "Pair (cell 6 line 1): linalg ok, tosa ok, stablehlo ok" in out


def test_verify_with_inputs_from_a_later_cell(nb_dir: Path) -> None:
    proc = run_cli("verify", FIXTURE.name, "--module", "Pair", "--json", cwd=nb_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    # Pair's only inputs are those of `example_inputs()`, in the cell after the training one.
    assert result["ok"] is True and result["module"] == "Pair"


def test_export(nb_dir: Path) -> None:
    out = nb_dir / "model.mlir"
    proc = run_cli("export", FIXTURE.name, "--module", "Model", "-o", str(out), cwd=nb_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "linalg.matmul" in out.read_text()


def test_load_error_names_cell_and_line(nb_dir: Path) -> None:
    data = json.loads(FIXTURE.read_text())
    block = data["cells"][2]["source"]
    block.insert(1, "    scale = undefined_name * 2\n")  # cell 3, line 2
    broken = nb_dir / "broken.ipynb"
    broken.write_text(json.dumps(data))
    proc = run_cli("lower", broken.name, "--module", "Model", cwd=nb_dir)
    assert_one_line_error(proc, 2, "broken.ipynb:3:2:", "NameError", "failed at broken.ipynb:3:2")


def test_not_a_notebook(nb_dir: Path) -> None:
    bad = nb_dir / "bad.ipynb"
    bad.write_text('{"cells": [1, ')
    assert_one_line_error(run_cli("lower", bad.name, cwd=nb_dir), 2, "bad.ipynb:1:",
                          "invalid JSON")
    # `check` reports it as it reports a Python file that does not parse: located, exit 2.
    proc = run_cli("check", bad.name, cwd=nb_dir)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "bad.ipynb:1: error: not a notebook: invalid JSON" in proc.stdout


def test_definitions_before_the_module_ran(nb_dir: Path) -> None:
    # Positive control of the marker above (runs after the lowerings above).
    assert (nb_dir / "definitions-ran.marker").exists()

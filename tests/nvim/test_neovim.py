"""The Neovim plugin (editors/nvim) in a real headless Neovim against the real server.

Neovim runs with the plugin from the checkout on its runtimepath, on copies of
`examples/partial_lowering.py` and of the sentinel module of tests/lsp/workspace/ (its code
leaves a file behind when it runs), driven by tests/nvim/driver.lua. The driver answers the
trust prompt itself (it replaces `vim.ui.select`) and writes what Neovim's own state shows to
a JSON file that these tests read: lens titles, hover text, diagnostics with their lines, the
IR split's lines and its highlighted lines (extmarks), and the server's own serverInfo.

Sessions: before trust nothing runs (no sentinel file, serverInfo untrusted, no hover), after
"Trust this project" everything works; a second Neovim remembers the answer and
`:TorchMlirUntrust` withdraws it; an interpreter without the server is said plainly.

Needs `nvim` (Debian's 0.7.2: `bash tests/nvim/setup.sh`, which `make test` runs first);
`TML_NVIM` picks another binary (the plugin also supports newer Neovim). Skipped with the
reason when Neovim is missing, except on CI, where that fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "editors" / "nvim"
DRIVER = Path(__file__).with_name("driver.lua")
MODEL = ROOT / "examples" / "partial_lowering.py"
SENTINEL = ROOT / "tests" / "lsp" / "workspace" / "sentinel.py"
NVIM = os.environ.get("TML_NVIM", "nvim")

pytestmark = pytest.mark.timeout(240)


def _nvim() -> str:
    path = shutil.which(NVIM)
    if path is None:
        message = f"{NVIM} not found: run `bash tests/nvim/setup.sh` (make nvim-deps)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def _line(path: Path, needle: str) -> int:
    """The 0-based line of the first line of `path` containing `needle`."""
    for number, text in enumerate(path.read_text().splitlines()):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


def run_neovim(scenario: str, workspace: Path, home: Path, *, python: str | None = None,
               env_extra: dict[str, str] | None = None) -> dict[str, Any]:
    """Runs the driver's `scenario` in a headless Neovim; its result, with Neovim's output."""
    nvim = _nvim()
    result_path = home / f"result-{scenario}.json"
    env = dict(os.environ)
    env.update({
        # A Neovim of its own: no user config, trust answers kept under `home`.
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "TML_NVIM_SCENARIO": scenario,
        "TML_NVIM_WORKSPACE": str(workspace),
        "TML_NVIM_RESULT": str(result_path),
    })
    env.pop("TML_NVIM_PYTHON", None)
    if python is not None:
        env["TML_NVIM_PYTHON"] = python
    elif sys.prefix != sys.base_prefix:
        # The plugin's own choice: the active virtualenv (this test's).
        env["VIRTUAL_ENV"] = sys.prefix
    else:
        env["TML_NVIM_PYTHON"] = sys.executable
    env.update(env_extra or {})
    proc = subprocess.run(
        # No Python provider: Neovim's python ftplugin probes it on every Python buffer
        # (`has('python3')` runs python3 looking for pynvim: seconds on a busy machine).
        [nvim, "--headless", "--clean", "--cmd", "let g:loaded_python3_provider = 0",
         "--cmd", f"set rtp^={PLUGIN}", "-c", f"luafile {DRIVER}"],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=220,
    )
    output = (proc.stdout + proc.stderr)[-6000:]
    assert result_path.exists(), f"Neovim wrote no result (exit {proc.returncode})\n{output}"
    result: dict[str, Any] = json.loads(result_path.read_text())
    result["output"] = output
    assert result.get("error") is None, f"{result['error']}\n{output}"
    assert proc.returncode == 0, output
    for bad in ("stack traceback", "Error executing", "E5108"):
        assert bad not in output, output
    return result


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A workspace with copies of the model and the sentinel, and a Neovim home."""
    workspace = tmp_path_factory.mktemp("nvim-ws")
    shutil.copy(MODEL, workspace / MODEL.name)
    shutil.copy(SENTINEL, workspace / SENTINEL.name)
    return workspace, tmp_path_factory.mktemp("nvim-home")


@pytest.fixture(scope="module")
def session(project: tuple[Path, Path]) -> dict[str, Any]:
    """The whole session: untrusted, trusted, the model, its IR split."""
    workspace, home = project
    return run_neovim("full", workspace, home)


def test_nothing_runs_before_trust(session: dict[str, Any], project: tuple[Path, Path]) -> None:
    workspace, _ = project
    before = session["untrusted"]
    assert before["sentinel_ran"] is False
    assert before["info"]["trusted"] is False
    assert before["info"].get("engine") is None  # null (absent in Lua): no worker at all
    assert before["info"]["torchImported"] is False
    assert before["hover"] is None  # hovers lower: not without trust
    # Lenses are static: served untrusted, with the plugin's settings (not the default
    # lens targets linalg, tosa), so the settings reached the server. They show although the
    # driver's own BufEnter autocmd called vim.lsp.codelens.refresh() before the server was
    # ready (on Neovim 0.7 that alone leaves a buffer without lenses for good).
    assert before["lenses"][:2] == ["Show Linalg IR", "Show StableHLO IR"]
    # Asked once, about this project, offering to trust it.
    assert len(session["prompts"]) == 1
    prompt = session["prompts"][0]
    assert str(workspace) in prompt["prompt"] and prompt["items"][0] == "Trust this project"


def test_trust_answer_runs_the_code(session: dict[str, Any], project: tuple[Path, Path]) -> None:
    workspace, _ = project
    after = session["trust"]
    assert after["info"]["trusted"] is True
    assert after["sentinel_ran"] is True and (workspace / "sentinel-ran.txt").exists()
    assert after["store"]["roots"] == {str(workspace): True}


def test_lenses_diagnostics_and_hover(session: dict[str, Any]) -> None:
    model = session["model"]
    erfinv = _line(MODEL, "torch.erfinv(y)")
    at_erfinv = [d for d in model["diagnostics"] if d["lnum"] == erfinv]
    assert len(at_erfinv) == 1, model["diagnostics"]
    assert "erfinv" in at_erfinv[0]["message"] and "Linalg" in at_erfinv[0]["message"]
    assert at_erfinv[0]["severity"] == 1  # vim.diagnostic.severity.ERROR
    # The verdict lens arrived after the check: refreshed without workspace/codeLens/refresh.
    assert any(t.startswith("Linalg ✗") for t in model["lenses"]), model["lenses"]
    assert model["lin_line"] == _line(MODEL, "y = self.lin(x)")
    assert "```mlir" in model["hover"] and "linalg.matmul" in model["hover"]
    assert session["clients"] == 1  # one server for the project's two files


def test_ir_split_linked_both_ways(session: dict[str, Any]) -> None:
    ir = session["ir"]
    assert ir["shown"] and ir["windows"] == 2 and ir["focus_stayed"]
    assert ir["filetype"] == "mlir" and ir["syntax"] == "mlir"
    assert ir["name"].endswith("PortingCandidate.linalg.mlir")
    lines = ir["lines"]
    assert lines[0].startswith("// Partial Linalg lowering")
    lin, erfinv = session["model"]["lin_line"], ir["erfinv_line"]
    # Source → IR: the erfinv line lights up exactly its call; the Linear line its matmul.
    assert [m["line"] for m in ir["from_erfinv"]] == [ir["erfinv_call_line"]]
    lit = {m["line"] for m in ir["from_lin"]}
    assert ir["matmul_line"] in lit and ir["erfinv_call_line"] not in lit
    # (Neovim 0.7 does not report an extmark's line highlight group; later versions do.)
    assert {m.get("group", "TorchMlirLensLinkedIr") for m in ir["from_lin"]} == {
        "TorchMlirLensLinkedIr"}
    # IR → source: the cursor on each op lights up the line that made it.
    assert [m["line"] for m in ir["from_matmul"]] == [lin]
    assert [m["line"] for m in ir["from_erfinv_call"]] == [erfinv]
    assert ir["from_matmul"][0].get("group", "TorchMlirLensLinkedSource") == \
        "TorchMlirLensLinkedSource"


def test_answer_is_remembered_and_revocable(session: dict[str, Any],
                                            project: tuple[Path, Path]) -> None:
    workspace, home = project
    again = run_neovim("remembered", workspace, home)["remembered"]
    assert again["info"]["trusted"] is True  # from initializationOptions, before any prompt
    assert again["after_untrust"]["trusted"] is False
    assert again["answer"] is False  # remembered: not asked again either
    assert str(workspace) in again["refusal"]  # :TorchMlirShow says why there is no IR
    assert again["after_restart"]["trusted"] is False  # :TorchMlirRestart: the answer holds
    assert again["after_restart"]["pid"] != again["info"]["pid"]


def test_interpreter_without_the_server(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shutil.copy(SENTINEL, workspace / SENTINEL.name)
    shutil.copy(MODEL, workspace / MODEL.name)
    # The interpreter the project's venv was made from: no torch-mlir-lens, no pygls.
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    result = run_neovim("no_server", workspace, tmp_path / "home", python=str(base),
                        env_extra={"PYTHONPATH": "", "PYTHONNOUSERSITE": "1"})
    assert result["no_server"]["clients"] == 0
    messages = [n["message"] for n in result["notifications"]]
    assert len(messages) == 1, messages  # said once, not per file
    assert str(base) in messages[0] and "torch-mlir-lens (the language server)" in messages[0]
    assert result["notifications"][0]["level"] == 4  # vim.log.levels.ERROR
    assert not (workspace / "sentinel-ran.txt").exists()

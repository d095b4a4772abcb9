"""The server reads `[tool.torch-mlir-lens]` of the workspace's pyproject.toml, as CI does.

The client sends the editor's settings with their defaults (as VS Code does); the project's
keys win over them, its exampleInputs let a module without any comment be lowered, and an
edit to pyproject.toml applies once the client reports the file changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import (
    CONFIG,
    diagnostics,
    init_params,
    line_of,
    open_doc,
    plain,
    server_info,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

PYPROJECT = """[project]
name = "demo"

[tool.torch-mlir-lens]
targets = ["tosa"]
timeoutSeconds = 33

[tool.torch-mlir-lens.exampleInputs]
"models/rolls.py::Rolls" = "(torch.randn(2, 8),)"
"""
ROLLS = """import torch
from torch import nn


class Rolls(nn.Module):
    def forward(self, x):
        return torch.roll(x, shifts=1, dims=1) * 2.0
"""
EDITOR_DEFAULTS = {"diagnosticTargets": ["linalg", "tosa", "stablehlo"], "timeoutSeconds": 60,
                   "exampleInputs": {"Other": "(torch.randn(1),)"}}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "models").mkdir()
    (root / "models" / "rolls.py").write_text(ROLLS)
    return root


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, project: Path):
    # helpers.make_client records the server's capability registrations.
    lsp_client.set_configuration(EDITOR_DEFAULTS, section="torchMlirLens")
    await lsp_client.initialize_session(init_params(project, settings=EDITOR_DEFAULTS))
    yield
    await lsp_client.shutdown_session()


async def test_project_settings_win_over_editor_defaults(client: LanguageClient) -> None:
    settings = (await server_info(client, wait=False))["settings"]
    assert settings["diagnosticTargets"] == ["tosa"]
    assert settings["timeoutSeconds"] == 33
    # Merged: the editor's entry kept, the project's added.
    assert settings["exampleInputs"] == {"Other": "(torch.randn(1),)",
                                         "models/rolls.py::Rolls": "(torch.randn(2, 8),)"}
    (registration,) = client.registrations  # type: ignore[attr-defined]
    (item,) = registration.registrations
    assert item.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    watchers = plain(item.register_options)["watchers"]
    assert [w["globPattern"] for w in watchers] == ["**/pyproject.toml", "**/*.py"]


async def test_project_inputs_lower_a_module_and_only_its_targets_are_diagnosed(
        client: LanguageClient, project: Path) -> None:
    path = project / "models" / "rolls.py"
    uri = open_doc(client, path)
    roll_line = line_of(path, "torch.roll") - 1
    found = await wait_until(client, lambda: [d for d in diagnostics(client, uri)
                                              if d.range.start.line == roll_line])
    assert all("TOSA" in d.message for d in found), [d.message for d in found]
    assert all("Linalg" not in d.message and "StableHLO" not in d.message
               for d in diagnostics(client, uri))


async def test_an_edited_pyproject_applies_when_the_client_reports_it(
        client: LanguageClient, project: Path) -> None:
    pyproject = project / "pyproject.toml"
    pyproject.write_text(PYPROJECT.replace("timeoutSeconds = 33", "timeoutSeconds = 44"))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]))

    async def timeout_is_44() -> bool:
        return (await server_info(client, wait=False))["settings"]["timeoutSeconds"] == 44

    await wait_until(client, timeout_is_44, timeout=60)
    pyproject.write_text(PYPROJECT.replace("targets = [\"tosa\"]", "targets = [\"spirv\"]"))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]))

    async def back_to_editor() -> bool:  # a broken table is reported and ignored
        settings = (await server_info(client, wait=False))["settings"]
        return settings["diagnosticTargets"] == EDITOR_DEFAULTS["diagnosticTargets"]

    await wait_until(client, back_to_editor, timeout=60)

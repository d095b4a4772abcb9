"""Jupyter notebooks over LSP 3.17 notebook sync (`notebookDocument/*`), against the real
server and worker: lenses in the module's cell, diagnostics in the helper block's cell, hover
in a cell, the IR pane's map naming cells, the quick fix editing the right cell, cells that do
not parse, and a training cell that never runs.

The notebook is tests/notebooks/spread_model.ipynb, sent as VS Code sends a notebook: one
`notebookDocument/didOpen` with a text document per cell (`vscode-notebook-cell:` URIs).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import (
    CONFIG,
    HELPER_CELL,
    MODEL_CELL,
    NOTEBOOK,
    PAIR_CELL,
    Notebook,
    code_lenses,
    diagnostics,
    notebook_folder,
    request,
    start_notebook_session,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

MARKER = "training-ran.marker"


@pytest.fixture(scope="module")
def nb_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return notebook_folder(tmp_path_factory.mktemp("nb-ws"))


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, nb_folder: Path):
    result = await start_notebook_session(lsp_client, nb_folder, trusted=True)
    lsp_client.init_result = result  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def notebook(client: LanguageClient, nb_folder: Path) -> Notebook:
    nb = Notebook(nb_folder / NOTEBOOK.name)
    nb.did_open(client)
    return nb


def titles(lenses: list[types.CodeLens]) -> list[str]:
    return [lens.command.title for lens in lenses if lens.command]


async def test_server_asks_for_notebook_sync(client: LanguageClient) -> None:
    sync = client.init_result.capabilities.notebook_document_sync  # type: ignore[attr-defined]
    assert sync is not None
    [selector] = sync.notebook_selector
    assert selector.notebook == "*" and selector.cells is None  # all cells: they count


async def test_lenses_sit_in_the_module_cell(client: LanguageClient, notebook: Notebook) -> None:
    lenses = await code_lenses(client, notebook.uri_of(MODEL_CELL))
    assert "Show Linalg IR" in titles(lenses)
    show = next(lens for lens in lenses if lens.command and lens.command.title == "Show Linalg IR")
    assert show.range.start.line == 1  # `class Model` is the cell's second line
    assert show.command is not None and show.command.arguments
    assert show.command.arguments[0] == notebook.uri and show.command.arguments[1] == "Model"
    helper = await code_lenses(client, notebook.uri_of(HELPER_CELL))
    assert {lens.range.start.line for lens in helper} == {0}  # `class Block`, first line
    assert await code_lenses(client, notebook.uri_of(1)) == []  # the imports cell


async def test_diagnostics_land_in_the_helper_cell(client: LanguageClient,
                                                   notebook: Notebook) -> None:
    helper = notebook.uri_of(HELPER_CELL)

    def atan2() -> list[types.Diagnostic]:
        return [d for d in diagnostics(client, helper) if str(d.code).startswith("aten.atan2")]

    [diag] = await wait_until(client, atan2)
    assert diag.range.start.line == 9  # `return torch.atan2(h, h + 1.0)`, cell line 10
    assert "TOSA" in diag.message
    assert diagnostics(client, notebook.uri_of(MODEL_CELL)) == []


async def test_hover_in_a_cell(client: LanguageClient, notebook: Notebook) -> None:
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=notebook.uri_of(MODEL_CELL)),
        position=types.Position(line=9, character=12),  # `return self.head(x)`
    )
    found = await client.text_document_hover_async(params)
    assert found is not None and found.range is not None
    assert found.range.start.line == 9
    assert isinstance(found.contents, types.MarkupContent)
    assert "linalg.matmul" in found.contents.value
    assert "`Model` · cell 5 line 10" in found.contents.value


async def test_pane_map_names_cells(client: LanguageClient, notebook: Notebook) -> None:
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": notebook.uri, "module": "Model", "target": "linalg"})
    assert answer["ok"] is True
    assert "linalg.matmul" in answer["ir"]
    by_cell = {(m["uri"], m["line"]) for m in answer["map"]}
    assert (notebook.uri_of(HELPER_CELL), 9) in by_cell   # torch.relu(self.fc(x))
    assert (notebook.uri_of(MODEL_CELL), 10) in by_cell   # return self.head(x)
    assert all(m["uri"] != notebook.uri for m in answer["map"])
    # A position in a cell picks the module there.
    at = await request(client, "torchMlirLens/lower",
                       {"uri": notebook.uri_of(PAIR_CELL), "position": {"line": 4, "character": 0},
                        "target": "linalg"})
    assert at["module"] == "Pair" and at["ok"] is True  # inputs from the last cell


async def test_quick_fix_and_broken_cells(client: LanguageClient, nb_folder: Path) -> None:
    # A second notebook, unsaved (no file yet); a cell that does not parse is added later.
    scratch = Notebook(nb_folder / "scratch.ipynb", [
        ("markdown", "# Scratch"),
        ("code", "import torch\n\n\nclass Untyped(torch.nn.Module):\n"
                 "    def forward(self, a, b):\n        return a * b\n"),
    ])
    scratch.did_open(client)
    untyped = scratch.cells[1]
    [broken] = scratch.append_cells(client, "def half_typed(:\n    pass\n")

    def inputs_missing() -> list[types.Diagnostic]:
        return [d for d in diagnostics(client, untyped["uri"]) if d.code == "inputs-missing"]

    def skipped() -> list[types.Diagnostic]:
        return [d for d in diagnostics(client, broken["uri"]) if d.code == "cell-skipped"]

    [diag] = await wait_until(client, inputs_missing)
    assert diag.range.start.line == 3
    [bad] = await wait_until(client, skipped)
    assert bad.range.start.line == 0 and "does not parse" in bad.message

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=untyped["uri"]),
        range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag]),
    ))
    assert actions
    [action] = [a for a in actions if isinstance(a, types.CodeAction)]
    assert action.edit is not None and action.edit.changes is not None
    [(uri, [edit])] = action.edit.changes.items()
    assert uri == untyped["uri"]
    assert edit.range.start.line == 3  # right above `class Untyped` in its own cell
    assert "torch-mlir-lens: inputs=" in edit.new_text


async def test_training_cell_never_ran(client: LanguageClient, notebook: Notebook,
                                      nb_folder: Path) -> None:
    # Positive control: the imports cell's assignment ran (as the notebook's path), so the
    # missing training marker means the training cell did not.
    assert (nb_folder / "definitions-ran.marker").exists()
    assert not (nb_folder / MARKER).exists()

"""A notebook in an untrusted workspace: lenses from the cells' text alone, and nothing of the
notebook runs (its imports cell would write a marker file if it did), no worker at all."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import (
    CONFIG,
    MODEL_CELL,
    NOTEBOOK,
    Notebook,
    code_lenses,
    hover,
    notebook_folder,
    request,
    server_info,
    start_notebook_session,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def nb_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return notebook_folder(tmp_path_factory.mktemp("nb-untrusted"))


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, nb_folder: Path):
    await start_notebook_session(lsp_client, nb_folder, trusted=False)
    yield
    await lsp_client.shutdown_session()


async def test_untrusted_notebook_runs_nothing(client: LanguageClient, nb_folder: Path) -> None:
    notebook = Notebook(nb_folder / NOTEBOOK.name)
    notebook.did_open(client)
    cell = notebook.uri_of(MODEL_CELL)
    lenses = await code_lenses(client, cell)  # static: still there
    assert any(lens.command and lens.command.title == "Show Linalg IR" for lens in lenses)
    assert await hover(client, cell, 10) is None
    answer = await request(client, "torchMlirLens/lower", {"uri": notebook.uri, "module": "Model"})
    assert answer["ok"] is False and answer["error"]["kind"] == "untrusted"
    client.notebook_document_did_save(types.DidSaveNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=notebook.uri)))
    info = await server_info(client)
    assert info["trusted"] is False and info["engine"] is None
    assert not (nb_folder / "definitions-ran.marker").exists()
    assert not (nb_folder / "training-ran.marker").exists()

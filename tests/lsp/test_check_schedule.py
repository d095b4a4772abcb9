"""When checks are replaced: a settings change that needs no new lowering must not drop the
lowering check of a file opened just before it.

This is what VS Code does at start-up with files (or a notebook) already open: the documents
open, then the server pulls the folder's settings, which differ from the initialization
options; the open-time check was being cancelled and replaced by a static one, so the file
showed no unsupported op until it was saved.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import CONFIG, LOWER_TIMEOUT, diagnostics, init_params, open_doc, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(workspace, trusted=True))
    yield
    await lsp_client.shutdown_session()


async def test_settings_change_keeps_the_open_check(client: LanguageClient,
                                                    workspace: Path) -> None:
    uri = open_doc(client, workspace / "unsupported_ops.py")
    # At once, while the open-time check lowers (the worker's first job): lens targets only,
    # which changes no result and no diagnosed backend.
    client.set_configuration({"lensTargets": ["linalg"]}, section="torchMlirLens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))

    def erfinv_reported() -> bool:
        return any(str(d.code) == "aten.erfinv" for d in diagnostics(client, uri))

    await wait_until(client, erfinv_reported, timeout=LOWER_TIMEOUT)

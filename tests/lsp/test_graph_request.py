"""`torchMlirLens/graph` through the real server: a module's graph with each op's verdict per
backend; once the Verify command has run on the module's text, Verify's verdict on the graph
and its mismatch on the ops of the first diverging line (what the graph view draws after the
Verify lens); an edit that changes the module drops it with the Verify result."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient
from tests.cli.test_graph_cli import NOISY

from .helpers import CONFIG, change_doc, execute, init_params, open_doc, request

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    settings = {"diagnostics": "off"}  # the graph and Verify only: no background checks
    await lsp_client.initialize_session(init_params(workspace, trusted=True, settings=settings))
    yield
    await lsp_client.shutdown_session()


async def _graph(client: LanguageClient, uri: str) -> dict:
    answer = await request(client, "torchMlirLens/graph",
                           {"uri": uri, "module": "Noisy", "targets": ["linalg"]})
    return answer["graph"]


async def test_the_graph_carries_verify_once_it_ran(client: LanguageClient,
                                                    workspace: Path) -> None:
    path = workspace / "noisy.py"
    path.write_text(NOISY)
    uri = open_doc(client, path)
    before = await _graph(client, uri)
    ops = {n["op"] for n in before["nodes"]}
    assert {"aten.rand_like", "aten.add.Tensor", "aten.mul.Tensor"} <= ops
    assert before["verdicts"]["linalg"]["ok"] is True
    assert "verify" not in before and not any(n.get("verify") for n in before["nodes"])

    result = await execute(client, "torchMlirLens.verify", {"uri": uri, "module": "Noisy"})
    assert result["ok"] is False
    after = await _graph(client, uri)
    assert after["verify"]["ok"] is False and after["verify"]["line"] == 9
    marked = {n["op"] for n in after["nodes"] if n.get("verify")}
    assert marked == {"aten.rand_like", "aten.add.Tensor"}

    # The module edited: its Verify result is of another text, and the graph says nothing of it.
    change_doc(client, uri, NOISY.replace("x * 2.0", "x * 3.0"))
    edited = await _graph(client, uri)
    assert "verify" not in edited and not any(n.get("verify") for n in edited["nodes"])

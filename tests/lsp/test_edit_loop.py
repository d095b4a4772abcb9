"""The edit loop over a real server: a line changed in one module of five, then saved, costs
exactly one export, and the diagnostics of all five modules are fresh and at their lines.

Each module uses one op some backend cannot lower, so every module has diagnostics of its own
to check (op names as torch-mlir 20261001 reports them, see tests/lsp/test_diagnostics.py).
"""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import CONFIG, change_doc, diagnostics, init_params, open_doc, server_info, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIVE = textwrap.dedent('''\
    import torch
    from torch import nn


    # torch-mlir-lens: inputs=(torch.rand(2, 4) + 0.5,)
    class One(nn.Module):
        def forward(self, x):
            return torch.lgamma(x) + 1.0


    # torch-mlir-lens: inputs=(torch.rand(2, 4) + 0.5,)
    class Two(nn.Module):
        def forward(self, x):
            return torch.hypot(x, x) + 2.0


    # torch-mlir-lens: inputs=(torch.rand(2, 4) * 0.5,)
    class Three(nn.Module):
        def forward(self, x):
            y = torch.erfinv(x)
            return y + 3.0


    # torch-mlir-lens: inputs=(torch.rand(2, 4) + 0.5,)
    class Four(nn.Module):
        def forward(self, x):
            return torch.lgamma(x) * 4.0


    # torch-mlir-lens: inputs=(torch.rand(2, 4) + 0.5,)
    class Five(nn.Module):
        def forward(self, x):
            return torch.hypot(x, x) * 5.0
''')
EDITED = FIVE.replace("y = torch.erfinv(x)", "y = torch.fmod(x, 0.3)")


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(workspace, trusted=True))
    yield
    await lsp_client.shutdown_session()


def op_lines(client: LanguageClient, uri: str) -> set[tuple[int, str]]:
    """{(0-based line, op name up to its overload)} of the published op diagnostics."""
    return {(d.range.start.line, ".".join(str(d.code).split(".")[:2]))
            for d in diagnostics(client, uri) if str(d.code).startswith("aten.")}


def expected(text: str) -> set[tuple[int, str]]:
    """Each op line of `text` with the op every backend rejects there."""
    ops = {"torch.lgamma(": "aten.lgamma", "torch.hypot(": "aten.hypot",
           "torch.erfinv(": "aten.erfinv", "torch.fmod(": "aten.fmod"}
    return {(i, op) for i, line in enumerate(text.splitlines())
            for needle, op in ops.items() if needle in line}


async def exports_when_idle(client: LanguageClient) -> int:
    """The worker's export count once nothing more runs (the same twice, 1 s apart)."""
    last = -1
    while True:
        engine = (await server_info(client))["engine"]
        if not engine.get("busy") and engine["exportsRun"] == last:
            return last
        last = engine["exportsRun"]
        await asyncio.sleep(1.0)


async def test_one_edit_one_export_fresh_diagnostics(client: LanguageClient,
                                                      workspace: Path) -> None:
    path = workspace / "five_modules.py"
    path.write_text(FIVE)
    uri = open_doc(client, path)
    await wait_until(client, lambda: op_lines(client, uri) == expected(FIVE))
    before = await asyncio.wait_for(exports_when_idle(client), 120)

    # One line of Three changed (no line added), written to disk and saved, as an editor does.
    change_doc(client, uri, EDITED, version=2)
    path.write_text(EDITED)
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))

    want = expected(EDITED)
    assert want != expected(FIVE) and len(want) == 5
    await wait_until(client, lambda: op_lines(client, uri) == want)
    assert await asyncio.wait_for(exports_when_idle(client), 120) - before == 1
    assert op_lines(client, uri) == want  # nothing stale came after the export

"""Dynamic dims over a real server: export errors sit on the module's `dynamic=` comment, their
quick fixes (torch.export's suggested bound, an example of size 2) make the module lower, and
Verify reports each size it ran on the lens and in its answer."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import (
    CONFIG,
    change_doc,
    code_lenses,
    diagnostics,
    execute,
    init_params,
    open_doc,
    request,
    save_doc,
    settled,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SOURCE = """\
import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randint(0, 16, (2, 8)),)
# torch-mlir-lens: dynamic={"ids": {0: "batch", 1: "seq"}}
class Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(16, 8)
        self.pos = nn.Embedding(32, 8)

    def forward(self, ids):
        return self.tok(ids) + self.pos.weight[: ids.shape[1]]


# torch-mlir-lens: inputs=(torch.randn(1, 4),); dynamic={"x": {0: "batch"}}
class Rows(nn.Module):
    def forward(self, x):
        return x * 2
"""


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(
        workspace, trusted=True, settings={"diagnosticTargets": ["linalg"]}))
    yield
    await lsp_client.shutdown_session()


def _export_errors(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in diagnostics(client, uri) if d.code == "export-error"]


def _applied(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                       reverse=True):
        start, end = edit.range.start, edit.range.end
        assert start.line == end.line  # the fixes rewrite one comment line each
        line = lines[start.line]
        lines[start.line] = line[:start.character] + edit.new_text + line[end.character:]
    return "".join(lines)


async def _fix(client: LanguageClient, uri: str, diag: types.Diagnostic
               ) -> tuple[types.CodeAction, list[types.CodeAction]]:
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    fixes = [a for a in actions or [] if isinstance(a, types.CodeAction)]
    preferred = [a for a in fixes if a.is_preferred]
    assert len(preferred) == 1, [a.title for a in fixes]
    return preferred[0], fixes


async def test_quick_fixes_apply_what_torch_export_suggests(client: LanguageClient,
                                                             workspace: Path) -> None:
    path = workspace / "dynamic_fix.py"
    path.write_text(SOURCE)
    uri = open_doc(client, path)
    errors = await wait_until(client, lambda: len(_export_errors(client, uri)) == 2
                              and _export_errors(client, uri), what="two export errors")
    by_line = {d.range.start.line + 1: d for d in errors}
    lines = SOURCE.splitlines()
    bound_line = next(i for i, t in enumerate(lines, 1) if 'dynamic={"ids"' in t)
    small_line = next(i for i, t in enumerate(lines, 1) if 'dynamic={"x"' in t)
    assert set(by_line) == {bound_line, small_line}  # on the comments, not the classes
    assert "seq = Dim('seq', max=32)" in by_line[bound_line].message
    assert "torch.export specializes sizes 0 and 1" in by_line[small_line].message

    bound, _ = await _fix(client, uri, by_line[bound_line])
    assert bound.title == "Apply torch.export's fix: \"seq\" → \"seq<=32\""
    small, others = await _fix(client, uri, by_line[small_line])
    assert small.title == "Give the example `x` size 2 in dim 0"
    assert {a.title for a in others} == {small.title,
                                         'Make "batch" static (leave it out of dynamic=)'}

    text = SOURCE
    for action in (bound, small):
        assert action.edit is not None and action.edit.changes is not None
        text = _applied(text, action.edit.changes[uri])
    assert '1: "seq<=32"' in text and "torch.randn(2, 4)" in text
    change_doc(client, uri, text, version=2)
    save_doc(client, uri)
    for module, arg in (("Positions", "tensor<?x?xi64>"), ("Rows", "tensor<?x4xf32>")):
        answer = await request(client, "torchMlirLens/lower",
                               {"uri": uri, "module": module, "target": "linalg"})
        assert answer["ok"] is True, answer["diagnostics"]
        assert f"func.func @main(%arg0: {arg})" in answer["ir"]
    # The check of the fixed text publishes no export error (the edit alone drops the old).
    await settled(client)
    assert not _export_errors(client, uri)

    # Verify runs the bounded module at four sizes, the bound among them, each reported.
    result = await execute(client, "torchMlirLens.verify", {"uri": uri, "module": "Positions"})
    assert result["ok"] is True and result["message"].startswith("✓ matches eager at 4 sizes")
    assert [[d["size"] for d in s["dims"]] for s in result["sizes"]] == [
        [2, 8], [3, 2], [5, 7], [2, 32]]
    assert result["sizes"][0]["example"] and result["outputs"] == result["sizes"][0]["outputs"]

    async def verdict_on_lens() -> bool:
        return result["message"] in [lens.command.title for lens in await code_lenses(client,
                                                                                      uri)]

    await wait_until(client, verdict_on_lens, timeout=30)

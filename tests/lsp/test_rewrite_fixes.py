"""Rewrites over a real server: a culprit says why its backend refuses it, the rewrites the
worker proves come back as quick fixes, and applying one (a line of the module's comment, never
its code) makes the module lower on that backend, lenses say so, the IR marks the ops the
rewrite made, Verify on that backend's IR matches eager, and the export code is copied.

Culprits the corpora measured: `torch.special.erfinv` (TOSA, StableHLO), a rotary embedding's
empty slice (TOSA); `aten.histc` in a `transformers` mixture of experts is
test_rewritefixes_of_moe.py's.
"""

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
    hover,
    init_params,
    open_doc,
    request,
    save_doc,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SOURCE = """\
import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class Gauss(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.tanh(self.lin(x))
        return torch.special.erfinv(y) * 2


# torch-mlir-lens: inputs=(torch.randn(1, 4, 16, 8),)
class Rotary(nn.Module):
    def forward(self, q):
        n = q.shape[-1]
        q_rot, q_pass = q[..., :n], q[..., n:]
        return torch.cat((q_rot.sin() * 2, q_pass), dim=-1) + q_pass.sum(-1, keepdim=True)
"""

@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(
        workspace, trusted=True, settings={"diagnosticTargets": ["tosa", "stablehlo"]}))
    yield
    await lsp_client.shutdown_session()


def offered(client: LanguageClient, uri: str, line: int) -> types.Diagnostic | None:
    """The diagnostic at 1-based `line` once it carries proven rewrites."""
    for d in diagnostics(client, uri):
        if d.range.start.line == line - 1 and isinstance(d.data, dict) and d.data.get("rewrites"):
            return d
    return None


async def fixes_of(client: LanguageClient, uri: str,
                 diag: types.Diagnostic) -> dict[str, types.CodeAction]:
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    return {a.title: a for a in actions or [] if isinstance(a, types.CodeAction)}


def apply_fix(text: str, action: types.CodeAction, uri: str) -> str:
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes[uri]
    lines = text.splitlines(keepends=True)
    start, end = edit.range.start.line, edit.range.end.line
    assert edit.range.start.character == edit.range.end.character == 0  # whole lines
    return "".join([*lines[:start], edit.new_text, *lines[end:]])


async def lowers(client: LanguageClient, uri: str, module: str, target: str) -> dict:
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": module, "target": target})
    assert answer["ok"] is True, answer["diagnostics"]
    return answer


async def test_erfinv_and_an_empty_slice_get_quickfixes_of_that_lower_and_verify(
        client: LanguageClient, workspace: Path) -> None:
    path = workspace / "rewrites_model.py"
    path.write_text(SOURCE)
    uri = open_doc(client, path)
    erf = await wait_until(client, lambda: offered(client, uri, 13), what="erfinv's rewrite")
    assert erf.message == ("`torch.special.erfinv` (an alias of `aten.erfinv`) cannot be "
                           "lowered to TOSA, StableHLO")
    fixes = await fixes_of(client, uri, erf)
    titles = sorted(fixes)
    assert titles[0].startswith("Lower `aten.erfinv` on StableHLO through a rewrite (max error ")
    assert titles[1].startswith("Lower `aten.erfinv` on TOSA through a rewrite (max error ")
    assert titles[2].startswith("Lower `aten.erfinv` on TOSA, StableHLO through a rewrite")
    assert all(t.endswith(" on the example inputs)") for t in titles)

    # The empty slice: TOSA says why, and the slice and the sum over it share one rewrite.
    slice_diag = await wait_until(client, lambda: offered(client, uri, 20),
                                  what="the empty slice's rewrite")
    assert "(TOSA has no zero-sized tensors, and its result is `tensor<1x4x16x0xf32>`)" \
        in slice_diag.message
    (rotary_fix,) = (await fixes_of(client, uri, slice_diag)).values()
    assert rotary_fix.title.startswith("Lower `aten.slice.Tensor` on TOSA through a rewrite")

    text = apply_fix(SOURCE, rotary_fix, uri)  # bottom up: both edits are of the same text
    text = apply_fix(text, fixes[titles[2]], uri)
    assert text.count("# torch-mlir-lens: rewrites=") == 2
    assert "# torch-mlir-lens: rewrites=erfinv@tosa, erfinv@stablehlo\nclass Gauss" in text
    assert "# torch-mlir-lens: rewrites=empty_tensors@tosa\nclass Rotary" in text
    assert text.replace("# torch-mlir-lens: rewrites=erfinv@tosa, erfinv@stablehlo\n", "") \
        .replace("# torch-mlir-lens: rewrites=empty_tensors@tosa\n", "") == SOURCE
    path.write_text(text)
    change_doc(client, uri, text, version=2)
    save_doc(client, uri)

    tosa = await lowers(client, uri, "Gauss", "tosa")
    assert tosa["rewrites"] == ["erfinv"]
    assert any(ln.endswith("// rewrite erfinv") for ln in tosa["ir"].splitlines())
    await lowers(client, uri, "Gauss", "stablehlo")
    rotary = await lowers(client, uri, "Rotary", "tosa")
    assert rotary["rewrites"] == ["empty_tensors"]
    for module, target in (("Gauss", "tosa"), ("Gauss", "stablehlo"), ("Rotary", "tosa")):
        verdict = await execute(client, "torchMlirLens.verify",
                                {"uri": uri, "module": module, "target": target})
        assert verdict["ok"] is True, verdict["message"]

    async def lens_says() -> bool:
        titles = [lens.command.title for lens in await code_lenses(client, uri) if lens.command]
        return "TOSA ✓ with 1 rewrite · StableHLO ✓ with 1 rewrite" in titles

    await wait_until(client, lens_says, timeout=120, what="the verdict lens")
    shown = await hover(client, uri, 13)
    assert shown is not None and "tosa ✓ through rewrite erfinv" in str(shown.contents)

    code = await execute(client, "torchMlirLens.exportCode",
                         {"uri": uri, "module": "Gauss", "target": "tosa"})
    assert code["rewrites"] == ["erfinv"] and "def erfinv_newton(" in code["code"]
    assert "torch_mlir_lens" not in code["code"]

"""A proven way past an export refusal over a real server: the refused `if not self.initted:`
on a buffer says why at its line, the pin the worker proves comes back as a quick fix, and
applying it (a line of the module's comment, never its code) makes the module export, lower
and verify against eager."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import (
    CONFIG,
    change_doc,
    diagnostics,
    execute,
    init_params,
    open_doc,
    request,
    save_doc,
    wait_until,
)
from .test_rewrite_fixes import apply_fix, fixes_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

SOURCE = """\
import torch
from torch import nn


class Codebook(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("initted", torch.tensor(True))
        self.register_buffer("embed", torch.randn(16, 8))

    def forward(self, x):
        embed = self.embed
        if not self.initted:
            embed = x.mean(0, keepdim=True).expand_as(self.embed)
        return embed[(x[:, None] - embed[None]).pow(2).sum(-1).argmin(-1)]


# torch-mlir-lens: inputs=(torch.randn(4, 8),)
class Quantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.vq = Codebook()

    def forward(self, x):
        return self.vq(x)
"""
REFUSED_LINE = 13  # `if not self.initted:`


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(
        workspace, trusted=True, settings={"diagnosticTargets": ["linalg", "tosa"]}))
    yield
    await lsp_client.shutdown_session()


def pinned_offer(client: LanguageClient, uri: str) -> types.Diagnostic | None:
    """Quantizer's export refusal once it carries the proven pin."""
    for d in diagnostics(client, uri):
        data = d.data if isinstance(d.data, dict) else {}
        if data.get("module") == "Quantizer" and data.get("rewrites"):
            return d
    return None


async def test_the_pin_past_an_export_refusal_is_a_quick_fix_that_works(
        client: LanguageClient, workspace: Path) -> None:
    path = workspace / "pin_model.py"
    path.write_text(SOURCE)
    uri = open_doc(client, path)
    refused = await wait_until(client, lambda: pinned_offer(client, uri), timeout=180,
                               what="the pin's offer")
    assert refused.code == "export-error"
    assert "`if not self.initted:` (line 13) branches on the value of buffer `vq.initted` " \
           "(True)" in refused.message
    (fix,) = (await fixes_of(client, uri, refused)).values()
    assert fix.title.startswith("Export past the refusal: pin `vq.initted` to its value")
    text = apply_fix(SOURCE, fix, uri)
    assert "# torch-mlir-lens: rewrites=pin.vq.initted\nclass Quantizer" in text
    path.write_text(text)
    change_doc(client, uri, text, version=2)
    save_doc(client, uri)

    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "Quantizer", "target": "tosa"})
    assert answer["ok"] is True, answer["diagnostics"]
    assert answer["rewrites"] == ["pin.vq.initted"]
    verdict = await execute(client, "torchMlirLens.verify", {"uri": uri, "module": "Quantizer"})
    assert verdict["ok"] is True, verdict["message"]


TABULAR = """\
import torch
from torch import nn


# torch-mlir-lens: inputs=(torch.randn(6, 5), torch.tensor([0, 3, 1, 2, 1, 0]))
class TabularEncoder(nn.Module):  # zeroes the rows of a missing category, when there are some
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(4, 5)
        self.proj = nn.Linear(5, 8)

    def forward(self, numeric, codes):
        is_special = codes == 3
        h = numeric + self.embed(codes)
        if is_special.any():
            h = torch.where(is_special[:, None], torch.zeros_like(h), h)
        return self.proj(h)
"""


async def test_the_specialised_export_past_a_refusal_is_a_quick_fix_that_works(
        client: LanguageClient, workspace: Path) -> None:
    path = workspace / "specialized_model.py"
    path.write_text(TABULAR)
    uri = open_doc(client, path)

    def offered() -> types.Diagnostic | None:
        return next((d for d in diagnostics(client, uri) if isinstance(d.data, dict)
                     and d.data.get("module") == "TabularEncoder" and d.data.get("rewrites")),
                    None)

    refused = await wait_until(client, offered, timeout=180, what="the specialisation's offer")
    assert refused.code == "export-error"
    assert "holds only for inputs that decide these lines the same way" in refused.message
    (fix,) = (await fixes_of(client, uri, refused)).values()
    assert fix.title.startswith(
        "Export past the refusal: specialise it to the example's decisions")
    text = apply_fix(TABULAR, fix, uri)
    assert "# torch-mlir-lens: rewrites=export.specialize\nclass TabularEncoder" in text
    path.write_text(text)
    change_doc(client, uri, text, version=2)
    save_doc(client, uri)

    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "TabularEncoder", "target": "tosa"})
    assert answer["ok"] is True, answer["diagnostics"]
    assert answer["rewrites"] == ["export.specialize"]

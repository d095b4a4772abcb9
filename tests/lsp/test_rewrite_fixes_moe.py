"""`aten.histc` in a `transformers` mixture of experts over a real server: its proven rewrite
is a quick fix; TOSA also rejects the router's sort, whose quick fix then joins the same
comment line; the module then lowers on TOSA and Verify runs TOSA's IR against eager.

A server of its own that checks TOSA alone: the model is the slowest of these tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import CONFIG, change_doc, execute, init_params, open_doc, save_doc, wait_until
from .test_rewrite_fixes import apply_fix, fixes_of, lowers, offered

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(1200)]

MOE = """\
import torch
import transformers
from torch import nn


# torch-mlir-lens: inputs=(torch.randint(0, 64, (1, 8)),)
class TinyMoE(nn.Module):
    def __init__(self):
        super().__init__()
        config = transformers.Qwen2MoeConfig(
            vocab_size=64, hidden_size=32, intermediate_size=32, moe_intermediate_size=16,
            shared_expert_intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=2, num_experts=4, num_experts_per_tok=2)
        self.lm = transformers.Qwen2MoeModel(config).eval()

    def forward(self, ids):
        return self.lm(input_ids=ids).last_hidden_state
"""


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(
        workspace, trusted=True, settings={"defaultTarget": "tosa",
                                           "diagnosticTargets": ["tosa"]}))
    yield
    await lsp_client.shutdown_session()


async def test_histc_in_a_transformers_mixture_of_experts(client: LanguageClient,
                                                         workspace: Path) -> None:
    path = workspace / "moe_model.py"
    path.write_text(MOE)
    uri = open_doc(client, path)
    line = 17  # the user's line that reaches the router's histc and sort

    def histc_offer() -> types.Diagnostic | None:
        found = offered(client, uri, line)
        return found if found is not None and "histc" in str(found.code) else None

    diag = await wait_until(client, histc_offer, timeout=600, what="histc's rewrite")
    fixes = await fixes_of(client, uri, diag)
    on_tosa = next(a for t, a in fixes.items() if t.startswith("Lower `aten.histc` on TOSA "))
    assert "max error 0 on the example inputs" in on_tosa.title  # counts are exact
    text = apply_fix(MOE, on_tosa, uri)
    assert "# torch-mlir-lens: rewrites=histc@tosa" in text
    path.write_text(text)
    change_doc(client, uri, text, version=2)
    save_doc(client, uri)

    # TOSA also rejects the router's sort: once histc is rewritten, its own quick fix adds
    # it to the same comment line.
    def sort_offer() -> types.Diagnostic | None:
        found = offered(client, uri, line + 1)  # one line down: the comment line added
        return found if found is not None and "sort" in str(found.code) else None

    sort = await wait_until(client, sort_offer, timeout=600, what="sort's rewrite")
    (sort_fix,) = [a for t, a in (await fixes_of(client, uri, sort)).items()
                   if t.startswith("Lower `aten.sort` on TOSA ")]
    text = apply_fix(text, sort_fix, uri)
    assert "# torch-mlir-lens: rewrites=histc@tosa, sort@tosa\nclass TinyMoE" in text
    change_doc(client, uri, text, version=3)
    save_doc(client, uri)
    answer = await lowers(client, uri, "TinyMoE", "tosa")
    assert answer["rewrites"] == ["histc", "sort"]
    verdict = await execute(client, "torchMlirLens.verify",
                            {"uri": uri, "module": "TinyMoE", "target": "tosa"})
    assert verdict["ok"] is True, verdict["message"]

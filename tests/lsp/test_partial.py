"""A module a backend only partly accepts, over the real server (examples/partial_lowering.py).

"Show Linalg IR" (the `torchMlirLens/lower` request the client sends) and the hover show the
Linear line's `linalg.matmul`, with the rejected ops marked at their lines; TOSA gets one
diagnostic per bad line, its knock-on ops as related information.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import CONFIG, diagnostics, hover, init_params, line_of, open_doc, request, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")

LINALG_BAD = {"torch.erfinv(": "aten.erfinv", "torch.fft.fft(": "aten.fft_fft",
              "torch.masked_select(": "aten.masked_select"}
TOSA_BAD = ("torch.erfinv(", "torch.fft.fft(", "torch.roll(", "r.scatter_add(",
            "torch.kthvalue(", "torch.masked_select(")


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(workspace, trusted=True))
    yield
    await lsp_client.shutdown_session()


async def test_show_linalg_ir_lowers_the_rest(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "partial_lowering.py"
    uri = open_doc(client, path)
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "PortingCandidate", "target": "linalg"})
    assert answer["ok"] is False and answer["partial"] is True
    ir = answer["ir"].splitlines()
    at = {}
    for m in answer["map"]:
        if m["uri"] == uri:
            at.setdefault(m["line"], []).append(ir[m["irLine"] - 1])
    linear = line_of(path, "y = self.lin(x)")
    assert any("linalg.matmul" in text for text in at[linear])
    # The header names the three rejected ops at their lines ...
    header = [text for text in ir if text.startswith("//")]
    for needle, op in LINALG_BAD.items():
        assert f"//   line {line_of(path, needle)}: `{op}`" in header
        # ... and each sits at its line as a call to a function named after it, marked.
        calls = [text for text in at[line_of(path, needle)] if f"call @torch.{op}(" in text]
        assert calls and all("// not lowered to Linalg" in text for text in calls)
    assert not any("torch.aten." in text for text in ir if not text.startswith("//")
                   and "@torch.aten." not in text)  # nothing else was left in Torch
    # The diagnostics of the result say the same, one per line.
    lines = [d["line"] for d in answer["diagnostics"]]
    assert sorted(lines) == sorted(line_of(path, n) for n in LINALG_BAD)


async def test_hover_on_a_good_line_shows_its_linalg(client: LanguageClient,
                                                     workspace: Path) -> None:
    path = workspace / "partial_lowering.py"
    uri = path.as_uri()
    result = await hover(client, uri, line_of(path, "y = self.lin(x)"))
    assert result is not None and isinstance(result.contents, types.MarkupContent)
    text = result.contents.value
    assert "linalg.matmul" in text
    assert "partial Linalg IR" in text and "failed" not in text
    bad = await hover(client, uri, line_of(path, "torch.erfinv("))
    assert bad is not None and isinstance(bad.contents, types.MarkupContent)
    assert "call @torch.aten.erfinv" in bad.contents.value


async def test_tosa_one_diagnostic_per_bad_line(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "partial_lowering.py"
    uri = path.as_uri()

    def tosa() -> list[types.Diagnostic]:
        return [d for d in diagnostics(client, uri) if "TOSA" in d.message]

    await wait_until(client, lambda: len({d.range.start.line for d in tosa()}) == 6,
                     timeout=180)
    by_line: dict[int, list[types.Diagnostic]] = {}
    for d in tosa():
        by_line.setdefault(d.range.start.line + 1, []).append(d)
    assert sorted(by_line) == sorted(line_of(path, n) for n in TOSA_BAD)
    assert all(len(ds) == 1 for ds in by_line.values()), by_line
    roll = by_line[line_of(path, "torch.roll(")][0]
    assert roll.message.startswith(
        "`torch.roll` (decomposed to `aten.slice.Tensor`) cannot be lowered to")
    masked = by_line[line_of(path, "torch.masked_select(")][0]
    assert masked.message.startswith("`aten.masked_select` cannot be lowered to")
    related = masked.related_information or []
    assert {r.message.split("`")[1] for r in related} == {
        "aten.size.int", "aten.le.int", "aten.Int.bool", "aten.Bool.int", "torch.runtime.assert"}
    for d in tosa():
        assert d.message.count("cannot be lowered") == 1

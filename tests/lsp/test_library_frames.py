"""Library frames over a real server: a hover on a wrapper's call line names the lines of
`modeling_gpt2.py` its ops come from, the IR pane's reply links ops to those lines, and an op
StableHLO rejects inside `transformers` code is reported on the user's line with the library
line in its message and relatedInformation (real torch-mlir, tiny configs, no download).
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls import uris
from pytest_lsp import LanguageClient

from .helpers import CONFIG, diagnostics, hover, init_params, line_of, open_doc, request, wait_until

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODELS = Path(__file__).resolve().parents[1] / "models"
ROW = re.compile(r"^\| (\d+) \| \[([^\]]+):(\d+)\]\(([^)]+)\) \| (.*) \|$")


def modeling_file(name: str) -> str:
    module = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    return os.path.realpath(str(module.__file__))


def line_with(path: str, needle: str) -> int:
    with open(path, encoding="utf-8") as f:
        hits = [i for i, text in enumerate(f, start=1) if needle in text]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def real(uri: str) -> str:
    return os.path.realpath(uris.to_fs_path(uri.split("#")[0]) or uri)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("libws")
    for name in ("library_wrappers.py", "llama_wrapper.py"):
        shutil.copy(MODELS / name, root / name)
    return root


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, ws: Path):
    # StableHLO is the backend that rejects the library op; checking TOSA too would only
    # add time.
    settings = {"diagnosticTargets": ["stablehlo"]}
    await lsp_client.initialize_session(init_params(ws, trusted=True, settings=settings))
    yield
    await lsp_client.shutdown_session()


def table_rows(markdown: str) -> list[tuple[int, str, int, str, str]]:
    """(ops, file name, line, link, code) of each row of the hover's library table."""
    out = []
    for text in markdown.splitlines():
        m = ROW.match(text)
        if m:
            out.append((int(m.group(1)), m.group(2), int(m.group(3)), m.group(4), m.group(5)))
    return out


async def test_hover_on_the_call_line_names_the_library_lines(client: LanguageClient,
                                                              ws: Path) -> None:
    path = ws / "library_wrappers.py"
    uri = open_doc(client, path)
    call = line_of(path, "out = self.lm(input_ids=ids)")
    result = await hover(client, uri, call)
    assert result is not None
    value = result.contents.value  # type: ignore[union-attr]
    assert "**Library lines reached**" in value and "```mlir" in value
    rows = table_rows(value)
    modeling = modeling_file("gpt2")
    wanted = {"attention": line_with(modeling, "attention_interface("),
              "MLP": line_with(modeling, "self.c_fc(hidden_states)"),
              "norm": line_with(modeling, "self.ln_1(hidden_states)")}
    found = {line: (ops, code, link) for ops, name, line, link, code in rows
             if name == "modeling_gpt2.py"}
    for what, line in wanted.items():
        assert line in found, (what, line, rows)
        ops, code, link = found[line]
        assert ops > 0
        assert real(link) == modeling and link.endswith(f"#L{line}")
        with open(modeling, encoding="utf-8") as f:
            assert f.read().splitlines()[line - 1].strip()[:40] in code
    counts = [r[0] for r in rows]
    assert counts == sorted(counts, reverse=True)


async def test_ir_reply_links_ops_to_library_lines(client: LanguageClient, ws: Path) -> None:
    path = ws / "library_wrappers.py"
    uri = path.as_uri()
    reply: dict[str, Any] = await request(client, "torchMlirLens/lower",
                                          {"uri": uri, "module": "GPT2Wrapper",
                                           "target": "linalg"})
    assert reply["ok"], reply["diagnostics"]
    frames = reply["frames"]
    library = set(frames["library"])
    ir = reply["ir"].splitlines()
    modeling = modeling_file("gpt2")
    attention = line_with(modeling, "attention_interface(")
    call = line_of(path, "out = self.lm(input_ids=ids)")
    innermost: dict[tuple[str, int], list[int]] = {}
    for ir_line, cid in frames["rows"]:
        flat = frames["chains"][cid]
        first_file, first_line = flat[0], flat[1]
        assert first_file in library  # the op was made in library code
        last_file, last_line = flat[-2], flat[-1]
        assert frames["files"][last_file] == uri and last_line == call
        innermost.setdefault((real(frames["files"][first_file]), first_line), []).append(ir_line)
    # Ops made on modeling_gpt2.py's attention line: Ctrl/Cmd-click opens it there.
    ops = innermost.get((modeling, attention))
    assert ops and all(ir[n - 1].strip() for n in ops)
    # The user map is unchanged: those IR lines still map to the wrapper's line.
    assert {m["line"] for m in reply["map"] if m["irLine"] in ops} == {call}


async def test_unsupported_op_in_library_code_is_on_the_user_line(client: LanguageClient,
                                                                  ws: Path) -> None:
    path = ws / "library_wrappers.py"
    uri = path.as_uri()  # opened by the hover test; its check runs on open
    modeling = modeling_file("idefics3")
    made = line_with(modeling, "step_h = 1.0 / nb_patches_h")
    found = await wait_until(client, lambda: [d for d in diagnostics(client, uri)
                                              if d.code == "aten.reciprocal"])
    [diag] = found
    assert diag.range.start.line == line_of(path, "return self.embed(pixels, mask)") - 1
    assert "StableHLO" in diag.message and f"modeling_idefics3.py:{made}" in diag.message
    related = diag.related_information or []
    places = [(real(r.location.uri), r.location.range.start.line) for r in related]
    assert places[0] == (modeling, made - 1)
    assert (modeling, line_with(modeling, "step_w = 1.0 / nb_patches_w") - 1) in places
    assert isinstance(related[0], types.DiagnosticRelatedInformation)
    assert "reciprocal" in related[0].message


async def test_installed_library_files_are_for_reading(client: LanguageClient) -> None:
    # Opened from an IR pane: no lenses, no "no example inputs" notes on every class, no
    # lowering of library classes on open or hover.
    modeling = Path(modeling_file("gpt2"))
    uri = open_doc(client, modeling)
    await wait_until(client, lambda: uri in client.diagnostics)
    assert diagnostics(client, uri) == []
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    assert not await client.text_document_code_lens_async(params)
    assert await hover(client, uri, line_with(str(modeling), "self.c_fc(hidden_states)")) is None
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_llama_hover_and_pane_reach_modeling_llama_lines(client: LanguageClient,
                                                               ws: Path) -> None:
    """Llama (a non-persistent RoPE buffer) lowers; its hover names the attention, MLP and
    norm lines of modeling_llama.py, and its IR reply links ops to those lines."""
    path = ws / "llama_wrapper.py"
    uri = open_doc(client, path)
    call = line_of(path, "out = self.lm(input_ids=ids)")
    result = await hover(client, uri, call)
    assert result is not None
    rows = table_rows(result.contents.value)  # type: ignore[union-attr]
    modeling = modeling_file("llama")
    named = {line for _ops, name, line, _link, _code in rows if name == "modeling_llama.py"}
    for needle in ("attention_interface(", "self.act_fn(self.gate_proj(x))",
                   "torch.rsqrt(variance"):
        assert line_with(modeling, needle) in named, needle
    reply: dict[str, Any] = await request(client, "torchMlirLens/lower",
                                          {"uri": uri, "module": "LlamaWrapper",
                                           "target": "linalg"})
    assert reply["ok"], reply["diagnostics"]
    frames = reply["frames"]
    linked = {(real(frames["files"][frames["chains"][cid][0]]), frames["chains"][cid][1])
              for _ir_line, cid in frames["rows"]}
    assert (modeling, line_with(modeling, "attention_interface(")) in linked

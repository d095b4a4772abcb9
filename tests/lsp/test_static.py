"""Static features in an untrusted workspace: lenses, module list, quick fix; no user code.

The server is told the workspace is not trusted: it must serve everything that needs no
lowering, run nothing (a sentinel file the user's code would write never appears), never
import torch, and say why. Then the client trusts the workspace without a restart: the
worker starts and the same code does run (the positive control of the sentinel check).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import psutil
import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import (
    CONFIG,
    code_lenses,
    diagnostics,
    execute,
    hover,
    init_params,
    line_of,
    open_doc,
    plain,
    request,
    server_info,
    wait_until,
    write_unreadable_comment_module,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    await lsp_client.initialize_session(init_params(workspace, trusted=False))
    yield
    await lsp_client.shutdown_session()


def titles(lenses: list[types.CodeLens]) -> list[str]:
    return [lens.command.title for lens in lenses if lens.command]


async def test_lenses_on_mlp(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "mlp.py"
    uri = open_doc(client, path)
    lenses = await code_lenses(client, uri)
    assert titles(lenses) == ["Show Linalg IR", "Show TOSA IR", "Export…", "Verify",
                              "Show Graph"]
    verify = lenses[3].command
    assert verify is not None and verify.command == "torchMlirLens.verify"
    class_line = line_of(path, "class MLP") - 1
    assert all(lens.range.start.line == class_line for lens in lenses)
    show = lenses[0].command
    assert show is not None and show.command == "torchMlirLens.showIr"
    assert plain(show.arguments) == [uri, "MLP", "linalg"]
    export = lenses[2].command
    assert export is not None and export.command == "torchMlirLens.exportModule"
    assert plain(export.arguments) == [{"uri": uri, "module": "MLP", "target": "linalg"}]


async def test_lenses_on_transformer(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "transformer.py"
    uri = open_doc(client, path)
    lenses = await code_lenses(client, uri)
    by_line: dict[int, list[str]] = {}
    for lens in lenses:
        by_line.setdefault(lens.range.start.line + 1, []).append(lens.command.title)
    for name in ("Attention", "FeedForward", "Block", "TinyTransformer"):
        line = line_of(path, f"class {name}(")
        assert by_line.get(line) == ["Show Linalg IR", "Show TOSA IR", "Export…", "Verify",
                                     "Show Graph"], name


async def test_module_without_inputs(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "no_inputs.py"
    uri = open_doc(client, path)
    lenses = await code_lenses(client, uri)
    assert titles(lenses) == ["Set example inputs"]
    assert lenses[0].command.command == "torchMlirLens.explainInputs"
    # One Information diagnostic on the class name (static: published even untrusted).
    found = await wait_until(client, lambda: diagnostics(client, uri), timeout=30)
    assert len(found) == 1
    diag = found[0]
    assert diag.severity == types.DiagnosticSeverity.Information
    assert diag.code == "inputs-missing" and diag.source == "torch-mlir"
    line = line_of(path, "class Mixer")
    text = path.read_text().splitlines()[line - 1]
    assert diag.range.start.line == line - 1
    assert text[diag.range.start.character:diag.range.end.character] == "Mixer"
    explained = await execute(client, "torchMlirLens.explainInputs",
                              {"uri": uri, "module": "Mixer"})
    assert explained["template"].startswith("# torch-mlir-lens: inputs=(torch.randn(")


async def test_an_unreadable_inputs_comment_is_an_error_at_its_line(
        client: LanguageClient, workspace: Path) -> None:
    # Two keys without the `;` between them: nothing of the comment applies, and the module
    # must not quietly get other inputs (or "no example inputs"): the comment line is marked.
    path = workspace / "bad_comment.py"
    comment_line = write_unreadable_comment_module(path, 'dynamic={"x": {0: "batch"}}')
    uri = open_doc(client, path)
    found = await wait_until(client, lambda: diagnostics(client, uri), timeout=30)
    (diag,) = found
    assert (diag.code, diag.severity, diag.range.start.line + 1) == (
        "bad-inputs", types.DiagnosticSeverity.Error, comment_line)
    assert "separate `inputs=` and `dynamic=` with `;`" in diag.message


async def test_modules_request(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "transformer.py"
    answer = await request(client, "torchMlirLens/modules", {"uri": path.as_uri()})
    by_name = {m["name"]: m for m in answer["modules"]}
    assert set(by_name) >= {"Attention", "FeedForward", "Block", "TinyTransformer"}
    top = by_name["TinyTransformer"]
    assert top["kind"] == "class" and top["inputs"] == "comment"
    assert top["range"]["start"]["line"] == line_of(path, "class TinyTransformer") - 1
    assert top["forwardRange"]["start"]["line"] == line_of(path, "def forward(self, idx") - 1
    assert by_name["Block"]["inputs"] == "derived"


async def test_diagnostics_off_clears_them(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "no_inputs.py").as_uri()
    assert diagnostics(client, uri)  # the Information diagnostic of test_module_without_inputs
    client.set_configuration({"diagnostics": "off"}, section="torchMlirLens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))
    await wait_until(client, lambda: diagnostics(client, uri) == [], timeout=30)
    info = await server_info(client)
    assert info["settings"]["diagnostics"] == "off"


async def test_example_inputs_setting_applies_without_restart(
    client: LanguageClient, workspace: Path
) -> None:
    uri = (workspace / "no_inputs.py").as_uri()
    assert titles(await code_lenses(client, uri)) == ["Set example inputs"]
    client.set_configuration(
        {"diagnostics": "off", "exampleInputs": {"Mixer": "(torch.randn(2, 8), torch.ones(3))"}},
        section="torchMlirLens",
    )
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))

    async def lenses_changed() -> bool:
        return titles(await code_lenses(client, uri)) == ["Show Linalg IR", "Show TOSA IR",
                                                          "Export…", "Verify",
                                                          "Show Graph"]

    await wait_until(client, lenses_changed, timeout=30)
    modules = await request(client, "torchMlirLens/modules", {"uri": uri})
    assert modules["modules"][0]["inputs"] == "settings"


async def test_untrusted_runs_nothing(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "sentinel.py"
    sentinel = workspace / "sentinel-ran.txt"
    uri = open_doc(client, path)
    line = line_of(path, "return x * 2")
    assert await hover(client, uri, line) is None
    answer = await request(client, "torchMlirLens/lower", {"uri": uri, "module": "Sentinel"})
    assert answer["ok"] is False and answer["error"]["kind"] == "untrusted"
    with pytest.raises(Exception, match="not trusted"):
        await execute(client, "torchMlirLens.exportModule",
                      {"uri": uri, "module": "Sentinel", "output": str(workspace / "s.mlir")})
    save_and_wait = diagnostics(client, uri)
    assert all(d.code != "worker-crash" for d in save_and_wait)
    info = await server_info(client)
    assert info["trusted"] is False and info["engine"] is None
    assert info["torchImported"] is False
    # The worker `serve` spawned before it knew was stopped and reaped at initialize.
    assert psutil.Process(info["pid"]).children(recursive=True) == []
    assert not sentinel.exists()
    assert any("not trusted" in m.message for m in client.messages)
    assert {"state": "untrusted", "detail": "workspace not trusted: no user code is run"} in (
        client.statuses  # type: ignore[attr-defined]
    )


async def test_trusting_later_enables_lowering(client: LanguageClient, workspace: Path) -> None:
    # Positive control of the sentinel: once trusted (no restart), the same code runs.
    path = workspace / "sentinel.py"
    sentinel = workspace / "sentinel-ran.txt"
    uri = path.as_uri()
    assert not sentinel.exists()
    client.protocol.notify("torchMlirLens/setTrusted", {"trusted": True})
    answer = await request(client, "torchMlirLens/lower",
                           {"uri": uri, "module": "Sentinel", "target": "torch"})
    assert answer["ok"] is True, answer.get("error")
    assert "torch.aten.mul" in answer["ir"]
    assert sentinel.exists()
    info = await server_info(client)
    assert info["trusted"] is True and info["engine"]["jobsRun"] >= 1
    assert info["torchImported"] is False  # the worker imported it, not the server
    await asyncio.sleep(0)

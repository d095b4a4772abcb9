"""A client that says nothing about trust, as a plain Neovim, Emacs or Helix setup does.

It sends no `initializationOptions.trusted` and cannot answer `workspace/configuration`: the
server must run none of the workspace's code (a sentinel file the code would write never
appears, no worker process), serve the static features, and say once how to trust. Its
settings arrive in `initializationOptions.settings` and in `workspace/didChangeConfiguration`
and must take effect. Then the client trusts through the `torchMlirLens.setTrusted` command
(what an editor without custom notifications can send): the same code does run (the
sentinel's positive control).
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from .helpers import (
    CONFIG,
    code_lenses,
    execute,
    hover,
    line_of,
    open_doc,
    request,
    server_info,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


def plain_editor_capabilities() -> types.ClientCapabilities:
    """What Neovim 0.7's built-in client announces that matters here: no
    `workspace.configuration`, no code lens refresh, no trust."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(apply_edit=True),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]),
            code_lens=types.CodeLensClientCapabilities(),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities()),
    )


@pytest_lsp.fixture(scope="module", config=CONFIG)
async def client(lsp_client: LanguageClient, workspace: Path):
    uri = workspace.as_uri()
    await lsp_client.initialize_session(types.InitializeParams(
        process_id=os.getpid(), root_uri=uri,
        workspace_folders=[types.WorkspaceFolder(uri=uri, name="ws")],
        capabilities=plain_editor_capabilities(),
        # Settings, and not a word about trust.
        initialization_options={"settings": {"timeoutSeconds": 42}},
    ))
    yield
    await lsp_client.shutdown_session()


async def test_no_trust_said_runs_nothing(client: LanguageClient, workspace: Path) -> None:
    path = workspace / "sentinel.py"
    uri = open_doc(client, path)
    lenses = await code_lenses(client, uri)  # static: served untrusted
    assert [lens.command.title for lens in lenses if lens.command][:1] == ["Show Linalg IR"]
    assert await hover(client, uri, line_of(path, "return x * 2")) is None
    answer = await request(client, "torchMlirLens/lower", {"uri": uri, "module": "Sentinel"})
    assert answer["ok"] is False and answer["error"]["kind"] == "untrusted"
    assert "torchMlirLens.setTrusted" in answer["error"]["message"]
    info = await server_info(client)
    assert info["trusted"] is False and info["engine"] is None
    assert psutil.Process(info["pid"]).children(recursive=True) == []
    assert not (workspace / "sentinel-ran.txt").exists()
    # Said once, with the way to trust; the status says trust is unknown, not refused.
    told = [m.message for m in client.messages if "did not say" in m.message]
    assert len(told) == 1 and '"trusted": true' in told[0]
    assert client.statuses[-1]["state"] == "untrusted"  # type: ignore[attr-defined]
    assert "unknown" in client.statuses[-1]["detail"]  # type: ignore[attr-defined]


async def test_settings_without_workspace_configuration(client: LanguageClient,
                                                       workspace: Path) -> None:
    info = await server_info(client)
    assert info["settings"]["timeoutSeconds"] == 42  # from initializationOptions
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"torchMlirLens": {"defaultTarget": "tosa", "lensTargets": ["stablehlo"]}}))

    async def applied() -> bool:
        return (await server_info(client))["settings"]["defaultTarget"] == "tosa"

    await wait_until(client, applied, timeout=30)
    info = await server_info(client)
    assert info["settings"]["lensTargets"] == ["stablehlo"]
    assert info["settings"]["timeoutSeconds"] == 42  # the pushed layer goes over, not instead
    lenses = await code_lenses(client, (workspace / "sentinel.py").as_uri())
    assert [lens.command.title for lens in lenses if lens.command][:1] == ["Show StableHLO IR"]


async def test_bad_trust_command_argument(client: LanguageClient) -> None:
    with pytest.raises(Exception, match="trusted"):
        await execute(client, "torchMlirLens.setTrusted", {"trusted": "yes"})
    assert (await server_info(client))["trusted"] is False


async def test_configuration_cannot_grant_trust(client: LanguageClient) -> None:
    """Pushed configuration may come from the workspace (eglot sends a project's
    .dir-locals.el, applied without asking): it never grants trust."""
    kept = {"defaultTarget": "tosa", "lensTargets": ["stablehlo"]}  # as pushed before
    for settings in ({"trusted": True}, {"torchMlirLens": {**kept, "trusted": True}}):
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=settings))
    # Notifications are handled in order: once serverInfo answers, both were seen.
    info = await server_info(client)
    assert info["trusted"] is False and info["engine"] is None


async def test_trust_command_enables_lowering(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "sentinel.py").as_uri()
    answer = await execute(client, "torchMlirLens.setTrusted", {"trusted": True})
    assert answer == {"trusted": True}
    lowered = await request(client, "torchMlirLens/lower", {"uri": uri, "module": "Sentinel"})
    assert lowered["ok"] is True, lowered.get("error")
    assert lowered["target"] == "tosa"  # the pushed default target
    assert "tosa.mul" in lowered["ir"]
    assert (workspace / "sentinel-ran.txt").exists()

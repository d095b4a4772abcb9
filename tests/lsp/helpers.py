"""Helpers of the language-server tests: a real server subprocess over stdio.

Each test module starts one server (module scope: the worker's torch import is paid once per
module) on its own copy of the examples and of `tests/lsp/workspace/`, so no test touches
`examples/` in place. Waiting is always on a condition with a time-out, never a bare sleep.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FIXTURES = Path(__file__).parent / "workspace"
SERVER_COMMAND = [sys.executable, "-m", "torch_mlir_lens", "serve"]
LOWER_TIMEOUT = 180.0  # first lowering includes the worker's torch import on a busy machine


def make_client() -> LanguageClient:
    """The pytest-lsp client, also recording our notifications and lens refreshes."""
    client = make_test_lsp_client()
    client.statuses = []  # type: ignore[attr-defined]
    client.lens_refreshes = 0  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]

    @client.feature("torchMlirLens/status")
    def on_status(params: Any) -> None:
        client.statuses.append(plain(params))  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def on_register(params: types.RegistrationParams) -> None:
        # Accepted, as VS Code does (e.g. the server's pyproject.toml watcher).
        client.registrations.append(params)  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_refresh(params: Any) -> None:
        client.lens_refreshes += 1  # type: ignore[attr-defined]

    return client


CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client)


def copy_workspace(dest: Path) -> Path:
    """Copies of the examples and of the test fixtures, side by side in `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for src in (EXAMPLES, FIXTURES):
        if src.is_dir():
            shutil.copytree(src, dest, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def init_params(root: Path, *, trusted: bool | None = True,
                settings: dict[str, Any] | None = None) -> types.InitializeParams:
    """`initialize` as VS Code sends it, with our initializationOptions."""
    options: dict[str, Any] = {"settings": settings or {}}
    if trusted is not None:
        options["trusted"] = trusted
    return types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
        initialization_options=options,
    )


def plain(value: Any) -> Any:
    """Custom-request results arrive as namedtuples: turn them back into JSON values."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


async def request(client: LanguageClient, method: str, params: Any,
                  timeout: float = LOWER_TIMEOUT) -> Any:
    """A custom request, answered as plain JSON."""
    fut = client.protocol.send_request_async(method, params)
    return plain(await asyncio.wait_for(fut, timeout))


async def server_info(client: LanguageClient, *, wait: bool = True) -> dict[str, Any]:
    """`torchMlirLens/serverInfo`; `wait`: for the worker's counters if it is busy."""
    return await request(client, "torchMlirLens/serverInfo", {"waitForWorker": wait},
                         timeout=150)


async def execute(client: LanguageClient, command: str, *arguments: Any,
                  timeout: float = LOWER_TIMEOUT) -> Any:
    params = types.ExecuteCommandParams(command=command, arguments=list(arguments))
    return plain(await asyncio.wait_for(
        client.workspace_execute_command_async(params), timeout))


def open_doc(client: LanguageClient, path: Path, text: str | None = None,
             version: int = 1) -> str:
    """didOpen a file (its disk text unless given); returns its URI."""
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(
            uri=uri, language_id="python", version=version,
            text=path.read_text() if text is None else text,
        )
    ))
    return uri


def change_doc(client: LanguageClient, uri: str, text: str, version: int) -> None:
    """didChange with the whole new text."""
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))


def save_doc(client: LanguageClient, uri: str) -> None:
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))


async def wait_until(client: LanguageClient, predicate: Callable[[], Any], *,
                     timeout: float = LOWER_TIMEOUT,
                     method: str = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS) -> Any:
    """Re-check `predicate` each time `method` arrives (and every 2 s) until it holds.

    The notification future is never cancelled (pytest-lsp would fail setting the result of
    a cancelled one): a pending one is reused until the notification comes.
    """
    deadline = time.monotonic() + timeout
    pending: asyncio.Future[Any] | None = None
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"condition not met within {timeout:.0f} s")
        if pending is None or pending.done():
            pending = asyncio.wrap_future(client.protocol.wait_for_notification(method))
        await asyncio.wait({pending}, timeout=min(remaining, 2.0))


def diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return list(client.diagnostics.get(uri, []))


async def hover(client: LanguageClient, uri: str, line: int, character: int = 8,
                timeout: float = LOWER_TIMEOUT) -> types.Hover | None:
    """Hover at 1-based `line`."""
    params = types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line - 1, character=character),
    )
    return await asyncio.wait_for(client.text_document_hover_async(params), timeout)


async def code_lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    return list(await asyncio.wait_for(client.text_document_code_lens_async(params), 30) or [])


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of the first line containing `needle`."""
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")


async def settled(client: LanguageClient, timeout: float = LOWER_TIMEOUT) -> dict[str, Any]:
    """serverInfo once no lowering runs (twice 0.3 s apart: a check's follow-up stage and
    the next module's check start right after the previous lowering)."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while True:
        info = await server_info(client)
        quiet = quiet + 1 if info["status"]["state"] != "lowering" else 0
        if quiet >= 2:
            return info
        if time.monotonic() > deadline:
            raise AssertionError(f"the server did not settle within {timeout:.0f} s")
        await asyncio.sleep(0.3)

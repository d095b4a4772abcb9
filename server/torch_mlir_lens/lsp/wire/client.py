"""The editor as the session sees it: what the server sends it, what it announced, and the
texts the transport keeps in sync.

The session (`checks/session.py`) is a plain object that never touches the transport: every
notification, request and message it sends goes through a `Client`, and the handlers read
the texts the client synchronised through it. `PyglsClient` is the one implementation, over
pygls's `LanguageServer` (which frames, dispatches and applies incremental edits); the
session does not know pygls is there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from lsprotocol import types
from pygls.capabilities import get_capability

from torch_mlir_lens.lsp.wire.json_rpc import converter_of

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer
    from pygls.progress import Progress

T = TypeVar("T")


class Client(Protocol):
    """What the session may do with the editor on the other end."""

    @property
    def capabilities(self) -> types.ClientCapabilities:
        """What the client announced at `initialize`."""
        ...

    def supports(self, path: str) -> bool:
        """Whether the client announced the capability at `path` (`workspace.configuration`)."""
        ...

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        ...

    def show(self, message: str, kind: types.MessageType) -> None:
        """`window/showMessage`."""
        ...

    def log(self, message: str, kind: types.MessageType) -> None:
        """`window/logMessage`."""
        ...

    def publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        """`textDocument/publishDiagnostics`."""
        ...

    def refresh_code_lenses(self) -> None:
        """`workspace/codeLens/refresh`."""
        ...

    async def configuration(self, params: types.ConfigurationParams) -> list[Any]:
        """`workspace/configuration`: the client's answer."""
        ...

    async def register_capability(self, params: types.RegistrationParams) -> None:
        """`client/registerCapability`."""
        ...

    @property
    def progress(self) -> Progress:
        """Work-done progress (`window/workDoneProgress/create`, `$/progress`)."""
        ...

    def text_of(self, uri: str) -> str:
        """The synchronised text of an open text document."""
        ...

    def language_of(self, uri: str) -> str | None:
        """The language id of an open text document (a notebook cell's)."""
        ...

    def notebook(self, uri: str) -> types.NotebookDocument | None:
        """The synchronised notebook document, if open."""
        ...

    def structure(self, value: Any, cls: type[T]) -> T:
        """A JSON value as `cls`, read as the client's messages are read."""
        ...


class PyglsClient:
    """`Client` over pygls's `LanguageServer`."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server

    @property
    def capabilities(self) -> types.ClientCapabilities:
        return self._server.client_capabilities

    def supports(self, path: str) -> bool:
        return bool(get_capability(self._server.client_capabilities, path, False))

    def notify(self, method: str, params: Any) -> None:
        self._server.protocol.notify(method, params)

    def show(self, message: str, kind: types.MessageType) -> None:
        self._server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log(self, message: str, kind: types.MessageType) -> None:
        self._server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self._server.text_document_publish_diagnostics(params)

    def refresh_code_lenses(self) -> None:
        self._server.workspace_code_lens_refresh(None)

    async def configuration(self, params: types.ConfigurationParams) -> list[Any]:
        return list(await self._server.workspace_configuration_async(params))

    async def register_capability(self, params: types.RegistrationParams) -> None:
        await self._server.client_register_capability_async(params)

    @property
    def progress(self) -> Progress:
        return self._server.work_done_progress

    def text_of(self, uri: str) -> str:
        return self._server.workspace.get_text_document(uri).source

    def language_of(self, uri: str) -> str | None:
        language: str | None = self._server.workspace.get_text_document(uri).language_id
        return language

    def notebook(self, uri: str) -> types.NotebookDocument | None:
        return self._server.workspace.get_notebook_document(notebook_uri=uri)

    def structure(self, value: Any, cls: type[T]) -> T:
        structured: T = converter_of(self._server).structure(value, cls)
        return structured

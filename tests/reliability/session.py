"""A real Torch-MLIR Lens server over stdio, driven by a pytest-lsp client from plain sync code.

The client lives on an event loop in a background thread, so that hypothesis state machines,
module-scoped fixtures and ordinary tests can all call `session.hover(...)` synchronously, and
concurrent traffic is still possible with `session.gather(...)`.

The session also records what a reliability test needs to judge the server: its stderr
(tracebacks), every diagnostics notification with the text it was published for, every
process the server was seen to spawn, and how it exited.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, LanguageClient, register_lsp_features

from . import procs

T = TypeVar("T")

MAX_LINE = 64 * 1024  # longer stderr lines (floods) are cut: tracebacks are short
STDERR_TAIL_BYTES = 64 * 1024
SECTION = "torchMlirLens"


SessionFactory = Callable[..., "LensSession"]  # the `lens` fixture: start a session


def server_command() -> list[str]:
    """How to start the server: `TORCH_MLIR_LENS_SERVER` (shell words) or the module itself."""
    override = os.environ.get("TORCH_MLIR_LENS_SERVER")
    if override:
        return override.split()
    return [sys.executable, "-m", "torch_mlir_lens", "serve"]


@dataclass
class StderrLog:
    """The server's stderr: byte count, a bounded tail, and every Python traceback in it.

    A traceback whose exception is a `pygls.exceptions.JsonRpc*` error (other than internal
    error) is how pygls logs a request the server refused on purpose, with a proper JSON-RPC
    error: `reported`. Any other traceback is an exception that escaped: `tracebacks`.
    """

    total: int = 0
    tail: bytearray = field(default_factory=bytearray)
    tracebacks: list[str] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)
    _partial: bytearray = field(default_factory=bytearray)
    _block: list[str] | None = None

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.tail += chunk
        del self.tail[:-STDERR_TAIL_BYTES]
        self._partial += chunk
        *lines, rest = self._partial.split(b"\n")
        self._partial = bytearray(rest[-MAX_LINE:])
        for raw in lines:
            self._line(raw[:MAX_LINE].decode("utf-8", "replace"))

    def _line(self, line: str) -> None:
        if line.startswith("Traceback (most recent call last)"):
            self._block = [line]
        elif self._block is not None:
            self._block.append(line)
            if line and not line[0].isspace():  # the exception line ends the block
                text = "\n".join(self._block[-60:])
                allowed = line.startswith("pygls.exceptions.JsonRpc") and (
                    "JsonRpcInternalError" not in line)
                (self.reported if allowed else self.tracebacks).append(text)
                self._block = None

    def text(self) -> str:
        return self.tail.decode("utf-8", "replace")


@dataclass
class PublishedDiagnostics:
    """One textDocument/publishDiagnostics, with the client's text of that document then."""

    uri: str
    version: int | None
    diagnostics: list[types.Diagnostic]
    text_then: str | None
    received: float


class RecordingClient(LanguageClient):
    """pytest-lsp's client, keeping the server's stderr instead of only forwarding it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stderr_log = StderrLog()

    async def start_io(self, cmd: str, *args: Any, **kwargs: Any) -> None:
        await super().start_io(cmd, *args, **kwargs)
        if self._stderr_forwarder is not None:
            self._stderr_forwarder.cancel()
        self._stderr_forwarder = asyncio.create_task(self._record_stderr())

    async def _record_stderr(self) -> None:
        server = self._server
        if server is None or server.stderr is None:
            return
        while chunk := await server.stderr.read(65536):
            self.stderr_log.feed(chunk)


class LensSession:
    """One server process and its client; every call is synchronous with a timeout."""

    def __init__(
        self,
        workspace: Path,
        *,
        trusted: bool = True,
        settings: dict[str, Any] | None = None,
        tmpdir: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workspace = workspace
        self.trusted = trusted
        self.settings = dict(settings or {})
        self.tmpdir = tmpdir
        self.extra_env = env or {}
        self.texts: dict[str, str] = {}  # uri → current text, as the client sent it
        self.versions: dict[str, int] = {}
        self.history: dict[tuple[str, int], str] = {}  # (uri, version) → text
        self.published: list[PublishedDiagnostics] = []
        self.statuses: list[Any] = []  # torchMlirLens/status notifications
        self.seen_pids: set[int] = set()  # every descendant of the server ever sampled
        self.returncode: int | None = None
        self._closed = False
        self.exited_in_time: bool | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.client: RecordingClient = self.run(self._make_client(), timeout=10)
        self.init_result: types.InitializeResult | None = None

    # -- plumbing -------------------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run `coro` on the session loop; raise TimeoutError after `timeout` seconds."""

        async def bounded() -> T:
            return await asyncio.wait_for(coro, timeout)

        future = asyncio.run_coroutine_threadsafe(bounded(), self._loop)
        try:
            return future.result(timeout + 5)
        except TimeoutError:
            future.cancel()
            raise

    async def _make_client(self) -> RecordingClient:
        client = RecordingClient(converter_factory=default_converter)
        features = dict(DEFAULT_CLIENT_FEATURES)

        def on_diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
            self._on_diagnostics(client, params)

        def on_status(client: LanguageClient, params: Any) -> None:
            self.statuses.append(plain(params))

        features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_diagnostics
        features["torchMlirLens/status"] = on_status
        register_lsp_features(client, features)
        client.set_configuration(self.settings, section=SECTION)
        return client

    def _on_diagnostics(
        self, client: LanguageClient, params: types.PublishDiagnosticsParams
    ) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        if params.version is not None:
            text = self.history.get((params.uri, params.version))
        else:
            text = self.texts.get(params.uri)
        self.published.append(
            PublishedDiagnostics(
                params.uri, params.version, list(params.diagnostics), text, time.monotonic()
            )
        )

    # -- life cycle -----------------------------------------------------------------------

    @property
    def pid(self) -> int:
        server = self.client._server
        assert server is not None, "server not started"
        return server.pid

    def start(self, timeout: float = 60) -> types.InitializeResult:
        """Spawn the server and run the initialize handshake."""
        env = dict(os.environ)
        env.update(self.extra_env)
        if self.tmpdir is not None:
            env["TMPDIR"] = str(self.tmpdir)
        cmd = server_command()
        self.run(self.client.start_io(*cmd, env=env, cwd=str(self.workspace)), timeout=20)
        params = types.InitializeParams(
            process_id=os.getpid(),
            root_uri=self.workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(self.workspace.as_uri(), "ws")],
            capabilities=_capabilities(),
            initialization_options={"trusted": self.trusted, "settings": self.settings},
        )
        self.init_result = self.run(self.client.initialize_session(params), timeout)
        self.sample_processes()
        return self.init_result

    def alive(self) -> bool:
        server = self.client._server
        return server is not None and server.returncode is None and procs.alive(server.pid)

    def sample_processes(self) -> set[int]:
        """Record and return the server's current descendants."""
        now = procs.descendants(self.pid) if self.alive() else set()
        self.seen_pids |= now
        return now

    def close(self, timeout: float = 20) -> None:
        """shutdown + exit, then wait for the server to end (killing it only as a last resort).

        Idempotent: a second call (the fixture's clean-up after a test's own close) is a no-op.
        """
        if self._closed:
            return
        self._closed = True
        if self.client._server is None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            return
        if self.alive():
            self.sample_processes()
            with contextlib.suppress(Exception):
                self.run(self.client.shutdown_async(None), timeout=timeout)
            self._loop.call_soon_threadsafe(self.client.exit, None)
            self.exited_in_time = self._wait_exit(timeout)
            if not self.exited_in_time:
                procs.kill_all([self.pid])
                self._wait_exit(5)
        server = self.client._server
        self.returncode = server.returncode if server is not None else None
        with contextlib.suppress(Exception):
            self.run(self._stop_client(), timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _wait_exit(self, timeout: float) -> bool:
        server = self.client._server
        if server is None:
            return True
        try:
            self.run(server.wait(), timeout=timeout)
            return True
        except TimeoutError:
            return False

    async def _stop_client(self) -> None:
        if self.client._stderr_forwarder is not None:
            # Let the recorder drain what the server wrote before it exited.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.client._stderr_forwarder, 5)
            self.client._stderr_forwarder = None
        self.client._stop_event.set()
        for task in self.client._async_tasks:
            task.cancel()

    def leftover_processes(self) -> set[int]:
        """Processes the server spawned that still run (call after close)."""
        return {pid for pid in self.seen_pids if procs.alive(pid)}

    # -- protocol -------------------------------------------------------------------------

    async def arequest(self, method: str, params: Any) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    def request(self, method: str, params: Any, timeout: float = 30) -> Any:
        """Send one request and wait for its result (raises on an error response).

        Results of methods lsprotocol does not know come back as plain dicts and lists.
        """
        result = self.run(self.arequest(method, params), timeout)
        self.sample_processes()
        if method.startswith("torchMlirLens/") or method == types.WORKSPACE_EXECUTE_COMMAND:
            return plain(result)
        return result

    def notify(self, method: str, params: Any) -> None:
        self._loop.call_soon_threadsafe(self.client.protocol.notify, method, params)

    def barrier(self, timeout: float = 30) -> None:
        """Round-trip a cheap request so every notification sent before it has been read.

        A code lens of a document that is not open: static, and never queued behind a job
        (serverInfo asks the worker for its counters, so it waits for a running job).
        """
        self.code_lens("file:///torch-mlir-lens-barrier/none.py", timeout)

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.as_uri()
        text = path.read_text() if text is None else text
        self._set_text(uri, text, 1)
        self.notify(
            types.TEXT_DOCUMENT_DID_OPEN,
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text)),
        )
        return uri

    def change(self, uri: str, text: str, edit: types.Range | None = None, new: str = "") -> None:
        """Send a didChange: a ranged edit (`edit`, `new`) if given, else the whole `text`."""
        version = self.versions[uri] + 1
        change: types.TextDocumentContentChangeEvent
        if edit is None:
            change = types.TextDocumentContentChangeWholeDocument(text=text)
        else:
            change = types.TextDocumentContentChangePartial(range=edit, text=new)
        self._set_text(uri, text, version)
        self.notify(
            types.TEXT_DOCUMENT_DID_CHANGE,
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version), [change]
            ),
        )

    def save(self, uri: str) -> None:
        self.notify(
            types.TEXT_DOCUMENT_DID_SAVE,
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)),
        )

    def close_doc(self, uri: str) -> None:
        self.texts.pop(uri, None)
        self.notify(
            types.TEXT_DOCUMENT_DID_CLOSE,
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)),
        )

    def _set_text(self, uri: str, text: str, version: int) -> None:
        self.texts[uri] = text
        self.versions[uri] = version
        self.history[(uri, version)] = text

    def hover_params(self, uri: str, line: int, character: int = 4) -> types.HoverParams:
        return types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))

    def hover(self, uri: str, line: int, character: int = 4, timeout: float = 60) -> Any:
        return self.request(
            types.TEXT_DOCUMENT_HOVER, self.hover_params(uri, line, character), timeout
        )

    def code_lens(self, uri: str, timeout: float = 30) -> Any:
        return self.request(
            types.TEXT_DOCUMENT_CODE_LENS,
            types.CodeLensParams(types.TextDocumentIdentifier(uri)),
            timeout,
        )

    def lower(self, uri: str, module: str, target: str = "linalg", timeout: float = 120) -> Any:
        return self.request(
            "torchMlirLens/lower", {"uri": uri, "module": module, "target": target}, timeout
        )

    def modules(self, uri: str, timeout: float = 30) -> Any:
        return self.request("torchMlirLens/modules", {"uri": uri}, timeout)

    def execute(self, command: str, arguments: list[Any], timeout: float = 120) -> Any:
        return self.request(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command=command, arguments=arguments),
            timeout,
        )

    def server_info(self, timeout: float = 30) -> dict[str, Any]:
        return self.request("torchMlirLens/serverInfo", {}, timeout)

    def set_settings(self, **changes: Any) -> None:
        """Change settings the way an editor does: new configuration + didChangeConfiguration."""
        self.settings.update(changes)
        self.client.set_configuration(dict(self.settings), section=SECTION)
        self.notify(
            types.WORKSPACE_DID_CHANGE_CONFIGURATION,
            types.DidChangeConfigurationParams(settings={SECTION: dict(self.settings)}),
        )

    def diagnostics(self, uri: str) -> list[types.Diagnostic]:
        return list(self.client.diagnostics.get(uri, []))

    def wait_diagnostics(
        self,
        uri: str,
        pred: Callable[[list[types.Diagnostic]], bool],
        timeout: float,
        what: str,
    ) -> list[types.Diagnostic]:
        """Wait until the newest diagnostics of `uri` satisfy `pred`; return them."""

        def check() -> list[types.Diagnostic] | None:
            diags = self.diagnostics(uri)
            return diags if pred(diags) else None

        try:
            result = procs.wait_until(check, timeout, what, interval=0.1)
        except procs.WaitTimeout as exc:
            got = [(d.code, d.message[:200]) for d in self.diagnostics(uri)]
            raise procs.WaitTimeout(f"{exc}; last diagnostics: {got}") from None
        assert isinstance(result, list)
        return result

    def health_report(self) -> str:
        """What went wrong on the server side, for assertion messages."""
        return (
            f"alive={self.alive()} client_error={self.client.error!r}\n"
            f"tracebacks={len(self.client.stderr_log.tracebacks)}\n"
            f"--- server stderr tail ---\n{self.client.stderr_log.text()[-4000:]}"
        )


def plain(value: Any) -> Any:
    """pygls turns unknown JSON objects into namedtuples: turn them back into dicts."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _capabilities() -> types.ClientCapabilities:
    """What VS Code announces, for the parts this server uses."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            configuration=True,
            did_change_configuration=types.DidChangeConfigurationClientCapabilities(True),
            workspace_folders=True,
        ),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]
            ),
            code_lens=types.CodeLensClientCapabilities(),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )

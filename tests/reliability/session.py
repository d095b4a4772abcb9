"""A real Torch-MLIR Lens server over stdio, driven from plain sync code: the LSP harness's
client (tests/harness/lsp_session.py, as tests/lsp/helpers.py makes it) on a background event loop.

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
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from tests.harness.lsp_session import (
    SECTION,
    PublishedDiagnostics,
    child_env,
    initialize_params,
    plain,
    server_command,
)
from tests.harness.waiting import WaitTimeout, wait_until

from lsp.helpers import LensTestClient, make_client

from . import procs

T = TypeVar("T")

# Re-exported: the reliability tests import these from here.
__all__ = ["LensSession", "SessionFactory", "server_command"]

SessionFactory = Callable[..., "LensSession"]  # the `lens` fixture: start a session


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
        self.seen_pids: set[int] = set()  # every descendant of the server ever sampled
        self.returncode: int | None = None
        self._closed = False
        self.exited_in_time: bool | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.client: LensTestClient = self.run(self._make_client(), timeout=10)
        self.recorder = self.client.recorder
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

    async def _make_client(self) -> LensTestClient:
        client = make_client(echo_stderr=False)  # kept in client.stderr_log, judged by tests
        client.set_configuration(self.settings, section=SECTION)
        return client

    @property
    def published(self) -> list[PublishedDiagnostics]:
        """Every diagnostics notification, with the text it was published for."""
        return self.recorder.published

    @property
    def statuses(self) -> list[dict[str, Any]]:
        """Every torchMlirLens/status notification."""
        return self.recorder.statuses

    @property
    def texts(self) -> dict[str, str]:
        """uri → current text, as the client sent it."""
        return self.recorder.texts

    @property
    def versions(self) -> dict[str, int]:
        return self.recorder.versions

    @property
    def history(self) -> dict[tuple[str, int], str]:
        """(uri, version) → the text the client sent as that version."""
        return self.recorder.history

    # -- life cycle -----------------------------------------------------------------------

    @property
    def pid(self) -> int:
        server = self.client._server
        assert server is not None, "server not started"
        return server.pid

    def start(self, timeout: float = 60) -> types.InitializeResult:
        """Spawn the server and run the initialize handshake."""
        extra = dict(self.extra_env)
        if self.tmpdir is not None:
            extra["TMPDIR"] = str(self.tmpdir)
        self.run(self.client.start_io(*server_command(), env=child_env(extra),
                                      cwd=str(self.workspace)), timeout=20)
        params = initialize_params(self.workspace, trusted=self.trusted, settings=self.settings)
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
        await self.client.drain_stderr()  # what the server wrote before it exited
        self.client.detach()

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
        self.recorder.forget_text(uri)
        self.notify(
            types.TEXT_DOCUMENT_DID_CLOSE,
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)),
        )

    def _set_text(self, uri: str, text: str, version: int) -> None:
        self.recorder.track_text(uri, text, version)

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
            result = wait_until(check, timeout, what, interval=0.1)
        except WaitTimeout as exc:
            got = [(d.code, d.message[:200]) for d in self.diagnostics(uri)]
            raise WaitTimeout(f"{exc}; last diagnostics: {got}") from None
        assert isinstance(result, list)
        return result

    def health_report(self) -> str:
        """What went wrong on the server side, for assertion messages."""
        return (
            f"alive={self.alive()} client_error={self.client.error!r}\n"
            f"tracebacks={len(self.client.stderr_log.tracebacks)}\n"
            f"--- server stderr tail ---\n{self.client.stderr_log.text()[-4000:]}"
        )

"""The Torch-MLIR Lens language server: state, feature registration, entry point.

Thin on purpose: each LSP feature lives in its own module under `features/` and registers
itself on the server (as esbonio's features do); everything that runs user code goes
through `EngineHost` (`engine_host.py`). This process never imports torch: the worker does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.lsp.server import LanguageServer

from torch_mlir_lens import __version__
from torch_mlir_lens.lsp import transport
from torch_mlir_lens.lsp.document import DocumentStore
from torch_mlir_lens.lsp.engine_host import EngineHost
from torch_mlir_lens.lsp.features.diagnostics.scheduler import CheckScheduler
from torch_mlir_lens.lsp.features.notebook_sync import SYNC_OPTIONS as NOTEBOOK_SYNC
from torch_mlir_lens.lsp.json_rpc import LensProtocol, lens_converter, protocol_of
from torch_mlir_lens.lsp.settings import Settings
from torch_mlir_lens.lsp.trust import Trust

if TYPE_CHECKING:
    pass

log = logging.getLogger("torch_mlir_lens")


class LensServer(LanguageServer):
    """pygls server plus the state the features share."""

    def __init__(self) -> None:
        super().__init__(
            "torch-mlir-lens", __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC,
            protocol_cls=LensProtocol, converter_factory=lens_converter,
        )
        self.settings = Settings()
        self.init_settings: dict[str, Any] = {}  # initializationOptions.settings
        # The last settings pushed in workspace/didChangeConfiguration (clients that cannot
        # answer workspace/configuration).
        self.pushed_settings: dict[str, Any] | None = None
        self.trust = Trust()  # untrusted until the client says otherwise
        self.workspace_root: str | None = None
        self.store = DocumentStore()
        self.host = EngineHost(self)
        self.initialized = False
        self.untrusted_announced = False
        self.checks = CheckScheduler()  # each document's diagnostics check under way
        self._background: set[asyncio.Task[Any]] = set()
        self._lens_refresh: asyncio.TimerHandle | None = None

    @property
    def trusted(self) -> bool:
        """May user code run (the client said the workspace is trusted)?"""
        return self.trust.trusted

    def background(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run a coroutine in the background, keeping a reference until it is done."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def refresh_lenses(self) -> None:
        """Ask the client to re-request code lenses soon (coalesced: one per burst)."""
        if self._lens_refresh is not None or not get_capability(
            self.client_capabilities, "workspace.code_lens.refresh_support", False
        ):
            return

        def send() -> None:
            self._lens_refresh = None
            with contextlib.suppress(Exception):  # the client may be gone; lenses are a nicety
                self.workspace_code_lens_refresh(None)

        self._lens_refresh = asyncio.get_running_loop().call_later(0.2, send)

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """A `window/showMessage` to the user."""
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))


class ClientLogHandler(logging.Handler):
    """Sends this package's log records to the client (`window/logMessage`).

    stdout is the protocol, so the client's output channel is where logs belong; records
    from before `initialized` (and pygls' own) go to stderr.
    """

    _LEVELS = (
        (logging.ERROR, types.MessageType.Error),
        (logging.WARNING, types.MessageType.Warning),
        (logging.INFO, types.MessageType.Info),
        (0, types.MessageType.Log),
    )

    def __init__(self, server: LensServer) -> None:
        super().__init__(logging.DEBUG)
        self._server = server
        self._sending = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._sending:
            return
        if not self._server.initialized:
            sys.stderr.write(self.format(record) + "\n")  # the client cannot take it yet
            return
        kind = next(k for level, k in self._LEVELS if record.levelno >= level)
        self._sending = True  # a log line emitted while sending must not recurse
        try:
            self._server.window_log_message(
                types.LogMessageParams(type=kind, message=self.format(record))
            )
        except Exception:
            pass
        finally:
            self._sending = False


def create_server() -> LensServer:
    """A server with every feature registered."""
    from torch_mlir_lens.lsp import features

    server = LensServer()
    features.register_all(server)
    handler = ClientLogHandler(server)
    handler.setFormatter(logging.Formatter("[%(levelname)s %(name)s] %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False  # once on the client's channel, not again on stderr
    return server


def serve_tcp(server: LensServer, host: str, port: int) -> int:
    """Serve LSP over TCP (`serve --tcp`) to the first client that connects, until it says
    exit or leaves; the exit code. Frames are read as on stdio (`transport.py`): a malformed
    one is answered, or ends the server with one line on stderr."""
    unreadable: list[str] = []

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)  # pygls writes bytes to it as to stdout
        try:
            await transport.serve_reader(transport.FrameReader(transport.StreamChunks(reader)),
                                         protocol_of(server))
        except transport.FramingError as exc:
            unreadable.append(str(exc))
        finally:
            done.set()

    async def main() -> None:
        listening = await asyncio.start_server(connection, host, port)
        async with listening:
            await done.wait()

    done = asyncio.Event()
    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit, BrokenPipeError):  # SystemExit: pygls's `exit`
        pass
    finally:
        server.shutdown()
        stop_worker(server)
    if unreadable:
        sys.stderr.write(f"torch-mlir-lens: the server stops: {unreadable[0]}\n")
        return 1
    return exit_code(server)


def stop_worker(server: LensServer) -> None:
    """The client vanished without shutdown/exit: take the worker (a process group) along."""
    server.host.discard_prespawned()  # never started (no `initialized`)
    pid = server.host.engine.worker_pid if server.host.engine else None
    if pid:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def exit_code(server: LensServer) -> int:
    """0 after a `shutdown` request, else 1 (the LSP's rule). pygls ends its loop on `exit`
    by a SystemExit it swallows: the state is read here."""
    return 0 if getattr(server.protocol, "_shutdown", False) else 1

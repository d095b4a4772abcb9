"""The Torch-MLIR Lens language server: the layers composed, the features registered.

Thin on purpose: the state lives in the session (`state/session.py`), the engine host and the
diagnostics checks one layer up (`checks/`), and each LSP feature in its own module under
`features/`, which registers itself on the server (as esbonio's features do). Everything that
runs user code goes through `EngineHost` (`checks/engine_host.py`). This process never imports
torch: the worker does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys

from lsprotocol import types

from torch_mlir_lens import __version__
from torch_mlir_lens.lsp.checks.checking_server import CheckingServer
from torch_mlir_lens.lsp.features import (
    code_actions,
    code_lens,
    commands,
    configuration,
    custom_requests,
    export_code,
    hover,
    lifecycle,
    notebook_sync,
    server_info,
    sync,
    trust_requests,
)
from torch_mlir_lens.lsp.wire import transport
from torch_mlir_lens.lsp.wire.json_rpc import LensProtocol, lens_converter, protocol_of

log = logging.getLogger("torch_mlir_lens")

# In registration order: life cycle and settings first, then sync, then what answers requests.
FEATURES = (lifecycle, configuration, trust_requests, server_info, sync, notebook_sync,
            code_lens, hover, code_actions, commands, export_code, custom_requests)


class LensServer(CheckingServer):
    """The checking server with the protocol's options: name, version, sync kinds, converter."""

    def __init__(self) -> None:
        super().__init__(
            "torch-mlir-lens", __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=notebook_sync.SYNC_OPTIONS,
            protocol_cls=LensProtocol, converter_factory=lens_converter,
        )


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
    server = LensServer()
    for feature in FEATURES:
        feature.register(server)
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

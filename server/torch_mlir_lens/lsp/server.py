"""The Torch-MLIR Lens language server: one table of methods, each a function of the session.

Thin on purpose, after ruff's server: the session (`checks/session.py`) is a plain object that
owns the state (settings, trust, documents), the engine host and the pending checks, and talks
to the editor only through its `Client` (`wire/client.py`); `ROUTES` maps each LSP method and
command to a module-level handler `fn(session, params)` of `features/`, marked ORDERED (it
changes the session: it runs to completion, in message order, before the next message is
taken) or BACKGROUND (it answers from what the session holds, as a task beside the others;
whatever it records goes through the stamped `Document` methods). pygls only frames,
dispatches and keeps the synchronised texts (`LensServer`). Everything that runs user code goes
through `EngineHost` (`checks/engine_host.py`). This process never imports torch: the worker
does.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import inspect
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from torch_mlir_lens import __version__
from torch_mlir_lens.lsp.checks.session import Session
from torch_mlir_lens.lsp.features import (
    code_actions,
    code_lens,
    commands,
    configuration,
    custom_requests,
    export_code,
    graph,
    hover,
    iree_profile,
    lifecycle,
    notebook_sync,
    onnx_model,
    server_info,
    sync,
    trust_requests,
)
from torch_mlir_lens.lsp.wire import transport
from torch_mlir_lens.lsp.wire.client import PyglsClient
from torch_mlir_lens.lsp.wire.json_rpc import LensProtocol, lens_converter, protocol_of
from torch_mlir_lens.protocol import lsp as lens_types

log = logging.getLogger("torch_mlir_lens")


class Kind(enum.Enum):
    """How a handler runs."""

    ORDERED = "ordered"  # changes the session: synchronous, before the next message is taken
    BACKGROUND = "background"  # answers from the session: may await, beside the others


ORDERED, BACKGROUND = Kind.ORDERED, Kind.BACKGROUND


@dataclass(frozen=True)
class Route:
    """One LSP method (or `workspace/executeCommand` command) and its handler."""

    method: str
    handler: Callable[..., Any]  # fn(session, params), or fn(session, *arguments): a command
    kind: Kind
    options: Any = None  # the method's registration options, if any
    command: bool = False


# In registration order: life cycle and settings first, then sync, then what answers requests.
ROUTES: tuple[Route, ...] = (
    Route(types.INITIALIZE, lifecycle.on_initialize, ORDERED),
    Route(types.INITIALIZED, lifecycle.on_initialized, ORDERED),
    Route(types.SHUTDOWN, lifecycle.on_shutdown, BACKGROUND),
    Route(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, configuration.on_watched, ORDERED),
    Route(types.WORKSPACE_DID_CHANGE_CONFIGURATION, configuration.on_configuration, ORDERED),
    Route(lens_types.SET_TRUSTED, trust_requests.on_set_trusted, ORDERED),
    Route(lens_types.SET_TRUSTED_COMMAND, trust_requests.set_trusted_command, ORDERED,
          command=True),
    Route(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, trust_requests.on_folders_changed,
          ORDERED),
    Route(lens_types.SERVER_INFO, server_info.server_info, BACKGROUND),
    Route(types.TEXT_DOCUMENT_DID_OPEN, sync.did_open, ORDERED),
    Route(types.TEXT_DOCUMENT_DID_CHANGE, sync.did_change, ORDERED),
    Route(types.TEXT_DOCUMENT_DID_SAVE, sync.did_save, ORDERED,
          types.SaveOptions(include_text=False)),
    Route(types.TEXT_DOCUMENT_DID_CLOSE, sync.did_close, ORDERED),
    Route(types.NOTEBOOK_DOCUMENT_DID_OPEN, notebook_sync.did_open, ORDERED),
    Route(types.NOTEBOOK_DOCUMENT_DID_CHANGE, notebook_sync.did_change, ORDERED),
    Route(types.NOTEBOOK_DOCUMENT_DID_SAVE, notebook_sync.did_save, ORDERED),
    Route(types.NOTEBOOK_DOCUMENT_DID_CLOSE, notebook_sync.did_close, ORDERED),
    Route(types.TEXT_DOCUMENT_CODE_LENS, code_lens.code_lens, BACKGROUND),
    Route(types.TEXT_DOCUMENT_HOVER, hover.hover, BACKGROUND),
    Route(types.TEXT_DOCUMENT_CODE_ACTION, code_actions.code_action, BACKGROUND,
          types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix])),
    Route(commands.EXPORT, commands.export_module, BACKGROUND, command=True),
    Route(commands.EXPORT_REPRO, commands.export_repro, BACKGROUND, command=True),
    Route(commands.EXPLAIN_INPUTS, commands.explain_inputs, BACKGROUND, command=True),
    Route(commands.VERIFY, commands.verify_module, BACKGROUND, command=True),
    Route(lens_types.EXPORT_CODE, export_code.export_code, BACKGROUND, command=True),
    Route(custom_requests.LOWER, custom_requests.lower, BACKGROUND),
    Route(custom_requests.MODULES, custom_requests.modules, BACKGROUND),
    Route(custom_requests.VERIFY, custom_requests.verify, BACKGROUND),
    Route(graph.GRAPH, graph.graph, BACKGROUND),
    Route(onnx_model.ONNX_MODEL, onnx_model.onnx_model, BACKGROUND),
    Route(iree_profile.PROFILE, iree_profile.profile, BACKGROUND, command=True),
)


class LensServer(LanguageServer):
    """pygls with the protocol's options (name, version, sync kinds, converter) and the
    session its handlers serve."""

    def __init__(self) -> None:
        super().__init__(
            "torch-mlir-lens", __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=notebook_sync.SYNC_OPTIONS,
            protocol_cls=LensProtocol, converter_factory=lens_converter,
        )
        self.session = Session(PyglsClient(self), "torch-mlir-lens", __version__)


def register(server: LensServer, routes: tuple[Route, ...] = ROUTES) -> None:
    """Register each route's handler on pygls, bound to the server's session."""
    for route in routes:
        if route.kind is ORDERED and inspect.iscoroutinefunction(route.handler):
            raise TypeError(f"{route.method}: an ORDERED handler runs to completion before the "
                            "next message; it cannot await (start a background task instead)")
        bound = _bound(server.session, route)
        if route.command:
            server.command(route.method)(bound)
        elif route.options is not None:
            server.feature(route.method, route.options)(bound)
        else:
            server.feature(route.method)(bound)


def _bound(session: Session, route: Route) -> Callable[..., Any]:
    """pygls's handler for a route: the route's function with the session in front."""
    fn = route.handler
    if inspect.iscoroutinefunction(fn):
        if route.command:
            async def command_task(*args: Any) -> Any:
                return await fn(session, *args)
            return command_task

        async def task(params: Any) -> Any:
            return await fn(session, params)
        return task
    if route.command:
        return lambda *args: fn(session, *args)
    return lambda params: fn(session, params)


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
        if not self._server.session.initialized:
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
    """A server with every route registered."""
    server = LensServer()
    register(server)
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
    host = server.session.host
    host.discard_prespawned()  # never started (no `initialized`)
    pid = host.engine.worker_pid if host.engine else None
    if pid:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)


def exit_code(server: LensServer) -> int:
    """0 after a `shutdown` request, else 1 (the LSP's rule). pygls ends its loop on `exit`
    by a SystemExit it swallows: the state is read here."""
    return 0 if getattr(server.protocol, "_shutdown", False) else 1

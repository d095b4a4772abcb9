"""A real LSP client over stdio driving `python -m torch_mlir_lens serve`, for timing.

Built on pygls 2's `pygls.lsp.client.LanguageClient`. Two deviations from its defaults, both
so that the client measures the server and not itself:
- results of custom requests (`torchMlirLens/lower`, ~MBs of JSON for a large model) are kept
  as plain dicts; pygls's default turns every JSON object into a freshly created namedtuple
  class, which costs the client ~seconds on a large IR map;
- the server's stderr goes to a log file, not a pipe nobody reads (a full pipe stalls it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage, default_converter

SECTION = "torchMlirLens"


def _converter_factory() -> Any:
    """pygls's converter, but results and params of non-LSP messages stay plain dicts."""
    conv = default_converter()
    conv.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    conv.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    return conv


@dataclass
class Event:
    """A notification seen by the client, with its arrival time (perf_counter)."""

    t: float
    method: str
    params: Any


@dataclass
class ClientLog:
    """Everything the server pushed, in arrival order."""

    events: list[Event] = field(default_factory=list)

    def of(self, method: str, since: float = 0.0) -> list[Event]:
        """Events of `method` that arrived at or after `since`."""
        return [e for e in self.events if e.method == method and e.t >= since]


class _Client(LanguageClient):
    """pygls client that starts the server with stderr to a file."""

    def __init__(self) -> None:
        super().__init__("torch-mlir-lens-bench", "0.1", converter_factory=_converter_factory)

    async def start_io_logged(self, cmd: list[str], stderr_path: Path, **kwargs: Any) -> None:
        """As `start_io`, with the server's stderr written to `stderr_path`."""
        with open(stderr_path, "ab") as err:
            server = await asyncio.create_subprocess_exec(
                *cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=err, **kwargs,
            )
        assert server.stdout is not None and server.stdin is not None
        self.protocol.set_writer(server.stdin)
        connection = asyncio.create_task(
            run_async(
                stop_event=self._stop_event, reader=server.stdout, protocol=self.protocol,
                error_handler=self.report_server_error,
            )
        )
        notify_exit = asyncio.create_task(self._server_exit())
        self._server = server
        self._async_tasks.extend([connection, notify_exit])


def child_env() -> dict[str, str]:
    """The environment for measured processes: as installed software runs.

    PYTHONDONTWRITEBYTECODE (set in some dev shells) makes every start recompile the product's
    modules from source, which an installed package never does; it is dropped.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def uri_of(path: Path) -> str:
    """file:// URI of an absolute path."""
    return path.resolve().as_uri()


class LensClient:
    """Drive one `torch-mlir-lens serve` process; every request returns (result, seconds)."""

    def __init__(
        self,
        workspace: Path,
        settings: dict[str, Any] | None = None,
        trusted: bool = True,
        python: str = sys.executable,
        log_path: Path | None = None,
    ) -> None:
        self.workspace = workspace
        self.settings = dict(settings or {})
        self.trusted = trusted
        self.python = python
        self.log_path = log_path or workspace / "server-stderr.log"
        self.messages_path = self.log_path.with_suffix(".messages.log")
        self.client = _Client()
        self.log = ClientLog()
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.t_spawn = 0.0
        self._changed = asyncio.Condition()
        self._install_handlers()

    # ---- process -------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The LSP server process id."""
        assert self.client._server is not None
        return self.client._server.pid

    async def start(self, extra_args: tuple[str, ...] = ()) -> float:
        """Spawn the server, `initialize` + `initialized`; return seconds spawn → initialized."""
        env = child_env()
        self.t_spawn = time.perf_counter()
        await self.client.start_io_logged(
            [self.python, "-m", "torch_mlir_lens", "serve", *extra_args], self.log_path,
            env=env, cwd=str(self.workspace),
        )
        params = types.InitializeParams(
            process_id=os.getpid(),
            root_uri=uri_of(self.workspace),
            workspace_folders=[types.WorkspaceFolder(uri_of(self.workspace), "bench")],
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(
                    configuration=True,
                    code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
                ),
                window=types.WindowClientCapabilities(work_done_progress=True),
                text_document=types.TextDocumentClientCapabilities(
                    hover=types.HoverClientCapabilities(
                        content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]
                    ),
                    publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                        version_support=True
                    ),
                ),
            ),
            initialization_options={"trusted": self.trusted, "settings": self.settings},
        )
        await self.client.initialize_async(params)
        self.client.initialized(types.InitializedParams())
        return time.perf_counter() - self.t_spawn

    async def stop(self, timeout: float = 10.0) -> None:
        """shutdown + exit; kill the server (only it) if it does not go."""
        server = self.client._server
        try:
            if server is not None and server.returncode is None:
                await asyncio.wait_for(self.client.shutdown_async(None), timeout)
                self.client.exit(None)
                await asyncio.wait_for(server.wait(), timeout)
        except Exception:
            pass
        if server is not None and server.returncode is None:
            server.kill()
            await server.wait()
        self.client._stop_event.set()
        for task in self.client._async_tasks:
            task.cancel()

    # ---- server → client -----------------------------------------------------------------

    def _install_handlers(self) -> None:
        c = self.client

        @c.feature(types.WORKSPACE_CONFIGURATION)
        def configuration(params: types.ConfigurationParams) -> list[Any]:
            out: list[Any] = []
            for item in params.items:
                if item.section == SECTION:
                    out.append(self.settings)
                elif item.section and item.section.startswith(SECTION + "."):
                    out.append(self.settings.get(item.section[len(SECTION) + 1:]))
                else:
                    out.append(None)
            return out

        @c.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def progress_create(params: Any) -> None:
            return None

        @c.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params: Any) -> None:
            return None

        @c.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def lens_refresh(params: Any) -> None:
            self._record("workspace/codeLens/refresh", None)

        @c.feature(types.WORKSPACE_DIAGNOSTIC_REFRESH)
        def diag_refresh(params: Any) -> None:
            return None

        @c.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def show_message_request(params: Any) -> None:
            return None

        for method in (
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
            types.WINDOW_LOG_MESSAGE,
            types.WINDOW_SHOW_MESSAGE,
            types.PROGRESS,
            "torchMlirLens/status",
        ):
            c.feature(method)(self._recorder(method))

    def _recorder(self, method: str) -> Callable[[Any], None]:
        def handler(params: Any) -> None:
            self._record(method, params)

        return handler

    def _record(self, method: str, params: Any) -> None:
        now = time.perf_counter()
        self.log.events.append(Event(now, method, params))
        if method != types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:  # keep the server's story
            text = getattr(params, "message", None) or params
            with contextlib.suppress(OSError), open(self.messages_path, "a") as f:
                f.write(f"{now - self.t_spawn:9.3f} {method} {text}\n")
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, pred: Callable[[], Any], timeout: float) -> Any:
        """Wait until `pred()` is truthy (checked on every notification); return its value."""
        deadline = time.perf_counter() + timeout
        async with self._changed:
            while not (value := pred()):
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise TimeoutError(f"condition not met within {timeout} s")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(left, 0.5))
            return value

    def state(self) -> str | None:
        """The last `torchMlirLens/status` state the server sent."""
        states = self.statuses_since(0.0)
        return states[-1] if states else None

    async def wait_idle(self, timeout: float = 300.0) -> float:
        """Wait until the server's status is no longer busy (a follow-up job after an answer,
        a check); return the seconds waited. Keeps background work out of the next timing."""
        t0 = time.perf_counter()
        while True:
            await self.wait_for(lambda: self.state() not in ("lowering", "starting"), timeout)
            # A follow-up job starts ~0.1 s after the answer's "ready": idle means quiet too.
            seen = len(self.log.events)
            await asyncio.sleep(0.4)
            if len(self.log.events) == seen and self.state() not in ("lowering", "starting"):
                return time.perf_counter() - t0 - 0.4
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError(f"server not idle within {timeout} s")

    def diagnostics_since(self, uri: str, since: float) -> list[Event]:
        """publishDiagnostics events for `uri` that arrived at or after `since`."""
        return [
            e for e in self.log.of(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, since)
            if e.params.uri == uri
        ]

    def statuses_since(self, since: float) -> list[str]:
        """`torchMlirLens/status` states that arrived at or after `since`."""
        out = []
        for e in self.log.of("torchMlirLens/status", since):
            p = e.params
            out.append(p.get("state") if isinstance(p, dict) else getattr(p, "state", None))
        return out

    # ---- documents -----------------------------------------------------------------------

    def open(self, path: Path, text: str | None = None) -> str:
        """didOpen `path` (its text on disk unless given); return its URI."""
        uri = uri_of(path)
        text = path.read_text() if text is None else text
        self.versions[uri] = 1
        self.texts[uri] = text
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> int:
        """didChange with the full new text; return the new version."""
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return self.versions[uri]

    def change_line(self, uri: str, line: int, new_text: str) -> int:
        """Incremental didChange replacing one line's content (as an editor sends a keystroke)."""
        lines = self.texts[uri].split("\n")
        old = lines[line]
        lines[line] = new_text
        self.texts[uri] = "\n".join(lines)
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(line, 0), types.Position(line, len(old))),
                    text=new_text,
                )],
            )
        )
        return self.versions[uri]

    def save(self, uri: str, path: Path | None = None) -> None:
        """Write the current text to disk (if `path`) and send didSave with the text."""
        if path is not None:
            path.write_text(self.texts[uri])
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(
                types.TextDocumentIdentifier(uri=uri), text=self.texts[uri]
            )
        )

    def open_uri(self, path: Path) -> str:
        """The URI `open` used for `path`."""
        return uri_of(path)

    def close(self, uri: str) -> None:
        """didClose."""
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )

    # ---- requests (each returns (result, seconds)) ---------------------------------------

    async def hover(self, uri: str, line: int, character: int = 8) -> tuple[Any, float]:
        """textDocument/hover at a 0-based line."""
        t0 = time.perf_counter()
        res = await self.client.text_document_hover_async(
            types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(line, character))
        )
        return res, time.perf_counter() - t0

    async def code_lens(self, uri: str) -> tuple[Any, float]:
        """textDocument/codeLens."""
        t0 = time.perf_counter()
        res = await self.client.text_document_code_lens_async(
            types.CodeLensParams(types.TextDocumentIdentifier(uri))
        )
        return res, time.perf_counter() - t0

    async def request(self, method: str, params: dict[str, Any]) -> tuple[Any, float]:
        """Any (custom) request; the result is a plain dict."""
        t0 = time.perf_counter()
        res = await self.client.protocol.send_request_async(method, params)
        return res, time.perf_counter() - t0

    async def lower(
        self, uri: str, module: str, target: str = "linalg", **extra: Any
    ) -> tuple[dict[str, Any], float]:
        """`torchMlirLens/lower` for a module by name."""
        return await self.request(
            "torchMlirLens/lower", {"uri": uri, "module": module, "target": target, **extra}
        )

    async def server_info(self) -> dict[str, Any]:
        """`torchMlirLens/serverInfo`: pid, torchImported, engine {jobs_run, exports_run, pid}."""
        res, _ = await self.request("torchMlirLens/serverInfo", {})
        return dict(res or {})


def hover_text(hover: Any) -> str:
    """The text of a Hover result ("" for none)."""
    if hover is None:
        return ""
    c = hover.contents
    if isinstance(c, types.MarkupContent):
        return c.value
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(x if isinstance(x, str) else x.value for x in c)
    return getattr(c, "value", str(c))


def maps_have_torch(pid: int) -> bool:
    """True if the process has any torch shared library mapped (libtorch*, libc10*)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            data = f.read()
    except OSError:
        return False
    return any(s in data for s in ("libtorch", "libc10", "_C.cpython", "_mlir_libs"))


def peak_rss_mb(pid: int) -> float:
    """VmHWM (peak RSS) of a live process, in MB."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")

"""The one LSP harness: a real `torch-mlir-lens serve` over stdio, as an editor drives it.

Used by the language-server tests (`tests/lsp`), the reliability suite (`tests/reliability`)
and the benchmark (`bench/`), so all three start the same server the same way and judge the
same records. This module defines, once:

- how the server is started: `server_command` and its environment, `child_env`;
- what the client announces: `capabilities` and `initialize_params`;
- what the server pushes, recorded by `Recorder`: our `torchMlirLens/status` notifications,
  published diagnostics (with the client's text they were published for), code-lens
  refreshes, capability registrations, log messages and progress;
- the server's stderr, kept by `StderrLog` (tracebacks) or written to a file;
- `plain`: custom-request results as plain JSON values;
- waiting on what the server pushed, with time-outs: `Recorder.wait_for` (other conditions:
  `tests/harness/waiting.py`).

`HarnessClient` puts these together on pygls's client. It needs only pygls and lsprotocol:
no torch, no pytest (the tests' pytest-lsp client adds itself on top, in tests/lsp/helpers.py).
It lives in `bench/` because the benchmark runs as `python -m bench.run` from the repository
root, and the tests import `bench` already (tests/conftest.py puts the root on `sys.path`).
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
from tests.harness.waiting import WaitTimeout

SECTION = "torchMlirLens"  # the settings section, as in the extension's package.json
STATUS = "torchMlirLens/status"
LENS_REFRESH = types.WORKSPACE_CODE_LENS_REFRESH
MAX_LINE = 64 * 1024  # longer stderr lines (floods) are cut: tracebacks are short
STDERR_TAIL_BYTES = 64 * 1024


# ---- starting the server ----------------------------------------------------------------


def server_command(*extra_args: str, python: str | None = None) -> list[str]:
    """How to start the server as the clients do: `python -P -m torch_mlir_lens serve` (this
    interpreter unless `python`), or the shell words of `TORCH_MLIR_LENS_SERVER` to try
    another build."""
    override = os.environ.get("TORCH_MLIR_LENS_SERVER")
    if override:
        return [*override.split(), *extra_args]
    return [python or sys.executable, "-P", "-m", "torch_mlir_lens", "serve", *extra_args]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the server (and of the bench's other measured processes): this
    one, as installed software runs, plus `extra`.

    PYTHONDONTWRITEBYTECODE (set in some dev shells) makes every start recompile the product's
    modules from source, which an installed package never does: it is dropped (it also made
    start-up figures depend on the shell). The persistent cache is off unless `extra` names
    its folder.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONUNBUFFERED", "1")
    # No persistent result cache unless asked for (`extra`): a figure or a test measures
    # lowering, not what an earlier run left in the user's cache folder.
    env.setdefault("TORCH_MLIR_LENS_CACHE_DIR", "")
    env.update(extra or {})
    return env


def capabilities(*, watch_files: bool = True, notebooks: bool = False
                 ) -> types.ClientCapabilities:
    """What VS Code announces, for the parts the server and pygls read.

    `watch_files`: dynamic registration of file watchers (the server then registers one for
    pyproject.toml at start-up). The benchmark announces `benchmark_capabilities` instead.
    `notebooks`: LSP 3.17 notebook sync.
    """
    caps = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            configuration=True,
            did_change_configuration=types.DidChangeConfigurationClientCapabilities(
                dynamic_registration=True),
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=watch_files),
            workspace_folders=True,
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
        ),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]),
            code_lens=types.CodeLensClientCapabilities(),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True, version_support=True),
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )
    if notebooks:
        caps.notebook_document = types.NotebookDocumentClientCapabilities(
            synchronization=types.NotebookDocumentSyncClientCapabilities(
                dynamic_registration=True, execution_summary_support=True))
    return caps


def benchmark_capabilities() -> types.ClientCapabilities:
    """The smaller set the benchmark has always announced, so its figures stay comparable
    from one round to the next (no file watcher, no dynamic configuration registration)."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            configuration=True,
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True)),
        window=types.WindowClientCapabilities(work_done_progress=True),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                version_support=True)))


def initialize_params(
    root: Path,
    *,
    trusted: bool | None = True,
    settings: dict[str, Any] | None = None,
    folder_name: str = "ws",
    watch_files: bool = True,
    notebooks: bool = False,
    announced: types.ClientCapabilities | None = None,
) -> types.InitializeParams:
    """`initialize` as the extension sends it: one workspace folder, our initializationOptions
    (`trusted` left out when None: a client that does not say). `announced` replaces the
    capabilities (the benchmark's own set)."""
    options: dict[str, Any] = {"settings": dict(settings or {})}
    if trusted is not None:
        options["trusted"] = trusted
    uri = root.as_uri()
    return types.InitializeParams(
        process_id=os.getpid(),
        root_uri=uri,
        workspace_folders=[types.WorkspaceFolder(uri=uri, name=folder_name)],
        capabilities=announced or capabilities(watch_files=watch_files, notebooks=notebooks),
        initialization_options=options,
    )


# ---- what comes back ----------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A result as plain JSON values: pygls's default converter turns unknown JSON objects
    into namedtuples, which are turned back into dicts (dicts and lists are walked)."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def plain_converter() -> Any:
    """pygls's converter, except that results and params of non-LSP messages (our custom
    requests and notifications) stay plain dicts: pygls would build a fresh namedtuple class
    per JSON object, which costs the client seconds on a large model's IR map."""
    conv = default_converter()
    conv.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    conv.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    return conv


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


@dataclass
class StderrLog:
    """The server's stderr: byte count, a bounded tail, and every Python traceback in it.

    A traceback whose exception is a `pygls.exceptions.JsonRpc*` error (other than internal
    error) is how pygls logs a request the server refused on purpose, with a proper JSON-RPC
    error: `reported`. Any other traceback is an exception that escaped: `tracebacks`.
    `echo`: also copy every chunk to this process's stderr (pytest shows it on failure).
    """

    echo: bool = False
    total: int = 0
    tail: bytearray = field(default_factory=bytearray)
    tracebacks: list[str] = field(default_factory=list)
    reported: list[str] = field(default_factory=list)
    _partial: bytearray = field(default_factory=bytearray)
    _block: list[str] | None = None

    def feed(self, chunk: bytes) -> None:
        if self.echo:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.buffer.write(chunk)
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
class Event:
    """A message the server pushed, with its arrival time (perf_counter)."""

    t: float
    method: str
    params: Any


@dataclass
class PublishedDiagnostics:
    """One textDocument/publishDiagnostics, with the client's text of that document then."""

    uri: str
    version: int | None
    diagnostics: list[types.Diagnostic]
    text_then: str | None
    received: float


class Recorder:
    """Everything the server pushed, in arrival order, and the client's document texts.

    Every recorded message wakes `wait_for`, so a wait ends as soon as its condition holds.
    """

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.published: list[PublishedDiagnostics] = []
        self.registrations: list[types.RegistrationParams] = []
        self.texts: dict[str, str] = {}  # uri → current text, as the client sent it
        self.versions: dict[str, int] = {}
        self.history: dict[tuple[str, int], str] = {}  # (uri, version) → text
        self.on_event: Callable[[Event], None] | None = None  # e.g. the bench's message log
        self._waiters: set[asyncio.Event] = set()  # one per running `wait_for`

    # -- recording -------------------------------------------------------------------------

    def record(self, method: str, params: Any) -> None:
        """Keep one message (called on the client's event loop)."""
        event = Event(time.perf_counter(), method, params)
        self.events.append(event)
        if method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            if params.version is not None:
                text = self.history.get((params.uri, params.version))
            else:
                text = self.texts.get(params.uri)
            self.published.append(PublishedDiagnostics(
                params.uri, params.version, list(params.diagnostics), text, time.monotonic()))
        elif method == types.CLIENT_REGISTER_CAPABILITY:
            self.registrations.append(params)
        if self.on_event is not None:
            self.on_event(event)
        for waiter in self._waiters:
            waiter.set()

    def track_text(self, uri: str, text: str, version: int) -> None:
        """The client sent `text` as `version` of `uri` (for `PublishedDiagnostics.text_then`)."""
        self.texts[uri] = text
        self.versions[uri] = version
        self.history[(uri, version)] = text

    def forget_text(self, uri: str) -> None:
        self.texts.pop(uri, None)
        self.versions.pop(uri, None)

    # -- reading ---------------------------------------------------------------------------

    def of(self, method: str, since: float = 0.0) -> list[Event]:
        """Events of `method` that arrived at or after `since`."""
        return [e for e in self.events if e.method == method and e.t >= since]

    @property
    def statuses(self) -> list[dict[str, Any]]:
        """Every `torchMlirLens/status` notification's params, as plain JSON."""
        return [plain(e.params) for e in self.of(STATUS)]

    def states_since(self, since: float) -> list[str | None]:
        """`torchMlirLens/status` states that arrived at or after `since`."""
        out = []
        for e in self.of(STATUS, since):
            p = e.params
            out.append(p.get("state") if isinstance(p, dict) else getattr(p, "state", None))
        return out

    @property
    def lens_refreshes(self) -> int:
        return len(self.of(LENS_REFRESH))

    async def wait_for(self, pred: Callable[[], Any], timeout: float,
                       what: str = "condition", poll: float = 0.5) -> Any:
        """Wait until `pred()` (sync or async) is truthy; return its value.

        Re-checked on every recorded message and every `poll` seconds (for conditions on
        requests' answers). A message that arrives while `pred` runs is not missed.
        """
        deadline = time.perf_counter() + timeout
        arrived = asyncio.Event()
        self._waiters.add(arrived)
        try:
            while True:
                arrived.clear()
                value = pred()
                if asyncio.iscoroutine(value):
                    value = await value
                if value:
                    return value
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise WaitTimeout(f"{what} not met within {timeout:.0f} s")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(arrived.wait(), min(left, poll))
        finally:
            self._waiters.discard(arrived)


# ---- the client ---------------------------------------------------------------------------


RECORDED_NOTIFICATIONS = (
    types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
    types.WINDOW_LOG_MESSAGE,
    types.WINDOW_SHOW_MESSAGE,
    types.PROGRESS,
    STATUS,
)
RECORDED_REQUESTS = (LENS_REFRESH, types.CLIENT_REGISTER_CAPABILITY)


class HarnessClient(LanguageClient):
    """pygls's client with the harness's server start, records and stderr capture.

    Cooperative: the tests' pytest-lsp client derives from it and pytest-lsp's client.
    `stderr_path`: the server's stderr goes to that file (appended; nothing reads a pipe a
    flood could fill); otherwise it is read into `stderr_log`.
    """

    def __init__(self, *args: Any, stderr_path: Path | None = None,
                 echo_stderr: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("converter_factory", plain_converter)
        super().__init__(*args, **kwargs)
        self.recorder = Recorder()
        self.stderr_log = StderrLog(echo=echo_stderr)
        self.stderr_path = stderr_path
        self.diagnostics: dict[str, Any] = {}  # uri → the newest diagnostics
        self._stderr_task: asyncio.Task[None] | None = None

    def install_features(self, defaults: dict[str, Callable[..., Any]] | None = None) -> None:
        """Register the recording handlers, each after the default of its method if any
        (`defaults`: method → handler taking (client, params), as pytest-lsp's are), and the
        other defaults as they are."""
        defaults = dict(defaults or {})
        for method in {*RECORDED_NOTIFICATIONS, *RECORDED_REQUESTS, *defaults}:
            self.feature(method)(self._handler(method, defaults.get(method)))

    def _handler(self, method: str, default: Callable[..., Any] | None
                 ) -> Callable[[Any], Any]:
        recorded = method in RECORDED_NOTIFICATIONS or method in RECORDED_REQUESTS

        def handler(params: Any) -> Any:
            if method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
                self.diagnostics[params.uri] = params.diagnostics
            result = default(self, params) if default is not None else None
            if recorded:
                self.recorder.record(method, params)
            return result

        return handler

    @property
    def pid(self) -> int:
        """The server's process id."""
        assert self._server is not None, "server not started"
        return self._server.pid

    async def start_io(self, cmd: str, *args: Any, **kwargs: Any) -> None:
        """Spawn the server (`cmd`, `args`; `env`, `cwd` as for asyncio) and connect to it."""
        err: Any = asyncio.subprocess.PIPE
        if self.stderr_path is not None:
            err = open(self.stderr_path, "ab")  # noqa: SIM115 - the child keeps its own copy
        try:
            server = await asyncio.create_subprocess_exec(
                cmd, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=err, **kwargs)
        finally:
            if self.stderr_path is not None:
                err.close()
        assert server.stdout is not None and server.stdin is not None
        self.protocol.set_writer(server.stdin)
        connection = asyncio.create_task(run_async(
            stop_event=self._stop_event, reader=server.stdout, protocol=self.protocol,
            error_handler=self.report_server_error))
        notify_exit = asyncio.create_task(self._server_exit())
        self._server = server
        self._async_tasks.extend([connection, notify_exit])
        if server.stderr is not None:
            self._stderr_task = asyncio.create_task(self._read_stderr(server.stderr))

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self.stderr_log.feed(chunk)

    async def drain_stderr(self, timeout: float = 5) -> None:
        """Wait (bounded) until everything the server wrote to stderr has been read."""
        if self._stderr_task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), timeout)

    async def stop(self) -> None:
        """pygls's stop (the server has exited), then the stderr reader's too."""
        await super().stop()
        await self.drain_stderr()
        if self._stderr_task is not None:
            self._stderr_task.cancel()

    async def stop_server(self, timeout: float = 10.0) -> bool:
        """shutdown + exit; kill the server (only it) if it does not go. Then stop the client.

        Returns whether the server exited on its own within `timeout`.
        """
        server = self._server
        exited = True
        try:
            if server is not None and server.returncode is None:
                await asyncio.wait_for(self.shutdown_async(None), timeout)
                self.exit(None)
                await asyncio.wait_for(server.wait(), timeout)
        except Exception:
            exited = False
        if server is not None and server.returncode is None:
            exited = False
            server.kill()
            await server.wait()
        await self.drain_stderr()
        self.detach()
        return exited

    def detach(self) -> None:
        """Stop reading from the server (it has exited or is left to the caller)."""
        self._stop_event.set()
        for task in self._async_tasks:
            task.cancel()
        if self._stderr_task is not None:
            self._stderr_task.cancel()


def uri_of(path: Path) -> str:
    """file:// URI of an absolute path."""
    return path.resolve().as_uri()

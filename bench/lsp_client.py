"""The benchmark's LSP client: the shared harness (tests/harness/lsp_session.py), every request
timed, driving `python -m torch_mlir_lens serve`.

Two choices of the harness matter for timing, so that the client measures the server and not
itself: results of custom requests (`torchMlirLens/lower`, ~MBs of JSON for a large model)
stay plain dicts, and the server's stderr goes to a log file, not a pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from tests.harness.lsp_session import (
    SECTION,
    Event,
    HarnessClient,
    benchmark_capabilities,
    child_env,
    initialize_params,
    server_command,
    uri_of,
)


class _Client(HarnessClient):
    """The harness client, named for the bench, stderr to `stderr_path`."""

    def __init__(self, stderr_path: Path) -> None:
        super().__init__("torch-mlir-lens-bench", "0.1", stderr_path=stderr_path)


# Folders outside a benchmark server's workspace whose files it lowers: the model corpora.
ALSO_TRUSTED = (Path(__file__).resolve().parents[1] / "tests" / "models",)


class LensClient:
    """Drive one `torch-mlir-lens serve` process; every request returns (result, seconds)."""

    def __init__(
        self,
        workspace: Path,
        settings: dict[str, Any] | None = None,
        trusted: bool = True,
        python: str = sys.executable,
        log_path: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workspace = workspace
        self.env = dict(env or {})  # on top of `child_env`'s
        self.settings = dict(settings or {})
        self.trusted = trusted
        self.python = python
        self.log_path = log_path or workspace / "server-stderr.log"
        self.messages_path = self.log_path.with_suffix(".messages.log")
        self.client = _Client(self.log_path)
        self.log = self.client.recorder  # every message the server pushed, in arrival order
        self.log.on_event = self._write_story
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.t_spawn = 0.0
        self.t_initialized = 0.0  # when the answer to `initialize` came: the server is up
        self.client.install_features(self._answers())

    # ---- process -------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """The LSP server process id."""
        return self.client.pid

    async def start(self, extra_args: tuple[str, ...] = ()) -> float:
        """Spawn the server, `initialize` + `initialized`; return seconds spawn → initialized."""
        env = child_env(self.env)
        cmd = server_command(*extra_args, python=self.python)
        self.t_spawn = time.perf_counter()
        await self.client.start_io(*cmd, env=env, cwd=str(self.workspace))
        # The capabilities the figures have always been measured with (no file watcher, no
        # dynamic configuration registration): a richer set moved cold start by ~50 ms.
        params = initialize_params(self.workspace.resolve(), trusted=self.trusted,
                                   settings=self.settings, folder_name="bench",
                                   announced=benchmark_capabilities())
        await self.client.initialize_async(params)
        self.t_initialized = time.perf_counter()
        self.client.initialized(types.InitializedParams())
        if self.trusted:
            # Trust is per folder: the corpora of tests/models are lowered where they are.
            self.client.protocol.notify("torchMlirLens/setTrusted", {
                "trusted": True, "folders": [p.resolve().as_uri() for p in ALSO_TRUSTED]})
        return time.perf_counter() - self.t_spawn

    async def stop(self, timeout: float = 10.0) -> None:
        """shutdown + exit; kill the server (only it) if it does not go."""
        await self.client.stop_server(timeout)

    # ---- server → client -----------------------------------------------------------------

    def _answers(self) -> dict[str, Any]:
        """Answers to the server's requests that the harness does not record."""

        def configuration(client: Any, params: types.ConfigurationParams) -> list[Any]:
            out: list[Any] = []
            for item in params.items:
                if item.section == SECTION:
                    out.append(self.settings)
                elif item.section and item.section.startswith(SECTION + "."):
                    out.append(self.settings.get(item.section[len(SECTION) + 1:]))
                else:
                    out.append(None)
            return out

        def nothing(client: Any, params: Any) -> None:
            return None

        return {
            types.WORKSPACE_CONFIGURATION: configuration,
            types.WINDOW_WORK_DONE_PROGRESS_CREATE: nothing,
            types.WORKSPACE_DIAGNOSTIC_REFRESH: nothing,
            types.WINDOW_SHOW_MESSAGE_REQUEST: nothing,
        }

    def _write_story(self, event: Event) -> None:
        """The server's story (all but diagnostics) in `messages_path`, for reading a run."""
        if event.method == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            return
        text = getattr(event.params, "message", None) or event.params
        with contextlib.suppress(OSError), open(self.messages_path, "a") as f:
            f.write(f"{event.t - self.t_spawn:9.3f} {event.method} {text}\n")

    async def wait_for(self, pred: Any, timeout: float) -> Any:
        """Wait until `pred()` is truthy (checked on every notification); return its value."""
        return await self.log.wait_for(pred, timeout)

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

    def statuses_since(self, since: float) -> list[str | None]:
        """`torchMlirLens/status` states that arrived at or after `since`."""
        return self.log.states_since(since)

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

"""A deliberately dumb JSON-RPC-over-stdio client, for traffic no real client would send.

It writes whatever bytes it is given and parses the server's stdout strictly: every byte must
belong to a `Content-Length`-framed JSON message. Anything else (a stray print, a stack trace)
lands in `garbage`, which tests assert stays empty.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.harness.lsp_session import StderrLog, child_env, server_command

from . import procs


def frame(body: bytes) -> bytes:
    """One LSP base-protocol message around `body`."""
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode(message: dict[str, Any]) -> bytes:
    return frame(json.dumps(message).encode())


class RawServer:
    """The server as a subprocess with raw pipes; a thread parses its stdout into messages."""

    def __init__(
        self,
        workspace: Path,
        tmpdir: Path | None = None,
        settings: dict[str, Any] | None = None,
        command: list[str] | None = None,
        new_session: bool = False,
        *,
        cwd: Path | None = None,
    ) -> None:
        """`command` and `cwd`: how to start it (default: as the clients do, in `workspace`);
        `new_session`: in a process group of its own, killed whole by the test."""
        env = child_env({"TMPDIR": str(tmpdir)} if tmpdir is not None else None)
        self.proc = subprocess.Popen(
            command or server_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd or workspace,
            env=env,
            start_new_session=new_session,  # its own process group, killed whole by the test
        )
        self.workspace = workspace
        self.settings = dict(settings or {})
        self.sent_at: dict[Any, float] = {}  # request id → perf_counter() when written
        self.arrived_at: dict[Any, float] = {}  # response id → perf_counter() when read
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.received: list[dict[str, Any]] = []
        self.garbage = bytearray()
        self.stderr_log = StderrLog()
        self.seen_pids: set[int] = set()
        self._next_id = 1000
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- reading --------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:  # headers
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length" and value.strip().isdigit():
                    length = int(value.strip())
                elif name.strip().lower() != b"content-type":
                    self.garbage += line
            if length is None:
                self.garbage += b"<frame without Content-Length>\n"
                continue
            body = out.read(length)
            try:
                message = json.loads(body)
            except ValueError:
                self.garbage += body
                continue
            if "id" in message and "method" not in message:
                self.arrived_at[message["id"]] = time.perf_counter()
            self.received.append(message)
            if "method" in message and "id" in message:
                self._answer_server_request(message)
            else:
                self.messages.put(message)

    def _read_stderr(self) -> None:
        err = self.proc.stderr
        assert err is not None
        while chunk := err.read1(65536):
            self.stderr_log.feed(chunk)

    # -- writing --------------------------------------------------------------------------

    def send_bytes(self, data: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        with self._write_lock:  # the reader thread answers server requests concurrently
            stdin.write(data)
            stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(encode(message))

    def request(self, method: str, params: Any = None, msg_id: Any = None) -> Any:
        """Send a request; return its id."""
        if msg_id is None:
            self._next_id += 1
            msg_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.sent_at[msg_id] = time.perf_counter()
        self.send(message)
        return msg_id

    def latency(self, msg_id: Any) -> float:
        """Seconds from writing request `msg_id` to reading its response (server + pipes)."""
        return self.arrived_at[msg_id] - self.sent_at[msg_id]

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1,
            "text": path.read_text() if text is None else text}})
        return uri

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def response(self, msg_id: Any, timeout: float) -> dict[str, Any]:
        """Wait for the response to `msg_id` (other messages are kept in `received`)."""
        deadline = time.monotonic() + timeout
        for message in self.received:
            if message.get("id") == msg_id and "method" not in message:
                return message
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise procs.WaitTimeout(f"no response to id {msg_id!r} in {timeout}s")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if message.get("id") == msg_id and "method" not in message:
                return message

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        """Answer the server's own requests (configuration, progress) so it never waits on us."""
        result: Any = None
        if message["method"] == "workspace/configuration":
            result = [self.settings for _ in message.get("params", {}).get("items", [])]
        with contextlib.suppress(OSError, ValueError):  # stdin already closed by the test
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def initialize(self, trusted: bool = False, timeout: float = 60) -> dict[str, Any]:
        """The handshake, untrusted by default: protocol tests never need the worker."""
        msg_id = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.workspace.as_uri(),
                "capabilities": {},
                "initializationOptions": {"trusted": trusted, "settings": self.settings},
            },
        )
        reply = self.response(msg_id, timeout)
        self.notify("initialized", {})
        self.sample_processes()
        return reply

    # -- life -----------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.proc.poll() is None

    def sample_processes(self) -> None:
        if self.alive():
            self.seen_pids |= procs.descendants(self.proc.pid)

    def close_stdin(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        with contextlib.suppress(OSError):
            stdin.close()

    def wait_exit(self, timeout: float) -> int | None:
        """The exit code, or None if the server is still running after `timeout`."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
            self.proc.wait(10)
        procs.kill_all(pid for pid in self.seen_pids if procs.alive(pid))

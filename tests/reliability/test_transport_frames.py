"""The stdio transport never goes deaf: every malformed frame is answered or ends the server.

The bytes written on the server's stdin are built here by hand, header by header (not by any
LSP library), and the server is started as an editor starts it: `python -P -m torch_mlir_lens
serve`, in a temporary folder. Each case asserts which of the two outcomes it gets, within
DEADLINE_S of the frame being written:

- answered: the reply (its code, its id or null, no traceback in it), then a well-formed
  request is answered too, so the reader found the next frame;
- ended: a non-zero exit, one line on stderr saying why, no traceback, no process left.

The frame reader's splitting is also run in-process on chunked input (`FrameReader`): how the
pipe happens to cut the stream must not change what is read.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from torch_mlir_lens.lsp.wire.transport import (
    QUIET_S,
    FrameReader,
    FramingError,
    Message,
    Misframed,
    Received,
    Unreadable,
    deliver,
)

from . import procs
from .rawrpc import RawServer

DEADLINE_S = 5.0  # a malformed frame is answered, or the server gone, within this
START_S = 60.0  # a server's start and initialize: a bound on waiting, not a speed target
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
STOP_LINE = "torch-mlir-lens: the server stops: "


def command() -> list[str]:
    """How an editor starts the server (-P: the folder it starts in is not on sys.path)."""
    return [sys.executable, "-P", "-m", "torch_mlir_lens", "serve"]


def frame(body: bytes, length: int | None = None, header: bytes = b"Content-Length") -> bytes:
    """One frame: a Content-Length header (its value `length`, else the body's), CRLF lines."""
    return b"%s: %d\r\n\r\n%s" % (header, len(body) if length is None else length, body)


def request(msg_id: Any, method: Any = "torchMlirLens/serverInfo", **extra: Any) -> bytes:
    """A request's JSON body (`extra` members replace or add to the usual ones; `...` leaves
    one out)."""
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {}, **extra}
    return json.dumps({k: v for k, v in message.items() if v is not ...}).encode()


def start(folder: Path) -> RawServer:
    server = RawServer(folder, command=command(), new_session=True)
    server.initialize(trusted=False, timeout=START_S)
    return server


def kill(server: RawServer) -> None:
    """The server's process group and each of its children's groups (the worker leads one)."""
    server.sample_processes()
    groups = {server.proc.pid}
    for pid in server.seen_pids:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    groups.discard(os.getpgrp())  # never the test runner's own
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    server.kill()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    """One server for the cases it survives: each case ends by checking it still answers."""
    server = start(tmp_path_factory.mktemp("transport"))
    yield server
    kill(server)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Callable[[], RawServer]]:
    """A server of its own, for a case that ends it."""
    servers: list[RawServer] = []

    def make() -> RawServer:
        servers.append(start(tmp_path))
        return servers[-1]

    yield make
    for server in servers:
        kill(server)


_ids = iter(range(10_000, 1_000_000))


def next_id() -> int:
    return next(_ids)


def reply(server: RawServer, since: int, msg_id: Any, timeout: float = DEADLINE_S
          ) -> dict[str, Any]:
    """The first response with `msg_id` (None: an error response with `"id": null`) among
    the messages received after the first `since`."""
    def find() -> dict[str, Any] | None:
        for message in server.received[since:]:
            if "method" in message or "id" not in message or message["id"] != msg_id:
                continue
            if msg_id is not None or "error" in message:
                return message
        return None

    found = procs.wait_until(find, timeout, f"a response with id {msg_id!r}")
    assert isinstance(found, dict)
    return found


def assert_no_traceback(message: dict[str, Any]) -> None:
    text = json.dumps(message)
    assert "Traceback" not in text and 'File \\"' not in text and "traceback" not in text, text


def assert_answers(server: RawServer) -> None:
    """A well-formed request written after the case is answered: the reader is in step."""
    since = len(server.received)
    msg_id = next_id()
    server.send_bytes(frame(request(msg_id)))
    answer = reply(server, since, msg_id)
    assert "result" in answer, answer
    assert not server.garbage, bytes(server.garbage[:300])
    assert not server.stderr_log.tracebacks, server.stderr_log.tracebacks[0]


def expect(server: RawServer, data: bytes, code: int | None, msg_id: Any) -> dict[str, Any]:
    """Write `data`; the answer within DEADLINE_S: a result (`code` None) or that error."""
    since = len(server.received)
    server.send_bytes(data)
    answer = reply(server, since, msg_id)
    if code is None:
        assert "result" in answer, answer
    else:
        assert answer.get("error", {}).get("code") == code, answer
        assert isinstance(answer["error"].get("message"), str), answer
    assert_no_traceback(answer)
    return answer


# -- frames that are read as they are meant, or answered ---------------------------------

def _lenient(name: str) -> Callable[[int], tuple[bytes, int | None, Any]]:
    """Header spellings a serious server accepts: the request is answered normally."""
    def case(msg_id: int) -> tuple[bytes, int | None, Any]:
        body = request(msg_id)
        data = {
            "lower-case name": b"content-length: %d\r\n\r\n" % len(body),
            "LF-only lines, other headers": (
                b"CONTENT-LENGTH: %d\nContent-Type: application/vscode-jsonrpc; "
                b"charset=utf-8\n\n" % len(body)),
            "no space after the colon": b"Content-Length:%d\r\n\r\n" % len(body),
            "junk lines before the header": (b"not a header\r\nX-Junk: 1\r\n"
                                             b"Content-Length: %d\r\n\r\n" % len(body)),
            "blank lines before the header": b"\r\n\n\r\n" + b"Content-Length: %d\r\n\r\n"
            % len(body),
        }[name]
        return data + body, None, msg_id
    return case


def _answered(name: str) -> Callable[[int], tuple[bytes, int | None, Any]]:
    """Frames that are answered with an error: (bytes, code, the id the answer carries)."""
    def case(msg_id: int) -> tuple[bytes, int | None, Any]:
        body = request(msg_id)
        cases: dict[str, tuple[bytes, int | None, Any]] = {
            "invalid JSON": (frame(b'{"jsonrpc": "2.0", "id": 1, "method": }'), PARSE_ERROR,
                             None),
            "cut-off JSON": (frame(body[:-12]), PARSE_ERROR, None),
            "not UTF-8": (frame(b'{"jsonrpc": "2.0", "method": "\xff\xfe"}'), PARSE_ERROR,
                          None),
            "NaN is not JSON": (frame(request(msg_id, params=float("nan"))), PARSE_ERROR, None),
            "empty body": (frame(b""), PARSE_ERROR, None),
            "Content-Length 10 short": (frame(body, len(body) - 10), INVALID_REQUEST, msg_id),
            "Content-Length 10 long, nothing after": (frame(body, len(body) + 10),
                                                      INVALID_REQUEST, msg_id),
            "object id": (frame(request({"a": 1})), INVALID_REQUEST, None),
            "array id": (frame(request([msg_id])), INVALID_REQUEST, None),
            "fractional id": (frame(request(msg_id + 0.5)), INVALID_REQUEST, None),
            "boolean id": (frame(request(True)), INVALID_REQUEST, None),
            "null id": (frame(request(None)), INVALID_REQUEST, None),
            "no method": (frame(request(msg_id, method=...)), INVALID_REQUEST, msg_id),
            "method not a string": (frame(request(msg_id, method=7)), INVALID_REQUEST, msg_id),
            "params a number": (frame(request(msg_id, params=3)), INVALID_REQUEST, msg_id),
            "no jsonrpc member": (frame(request(msg_id, jsonrpc=...)), INVALID_REQUEST, msg_id),
            "jsonrpc 1.0": (frame(request(msg_id, jsonrpc="1.0")), INVALID_REQUEST, msg_id),
            "a batch": (frame(b"[" + body + b"]"), INVALID_REQUEST, None),
            "an empty batch": (frame(b"[]"), INVALID_REQUEST, None),
            "a string": (frame(b'"initialize"'), INVALID_REQUEST, None),
            "a number": (frame(b"42"), INVALID_REQUEST, None),
            "a response with result and error": (
                frame(b'{"jsonrpc": "2.0", "id": %d, "result": 1, "error": {}}' % msg_id),
                INVALID_REQUEST, None),
        }
        return cases[name]
    return case


LENIENT = ["lower-case name", "LF-only lines, other headers", "no space after the colon",
           "junk lines before the header", "blank lines before the header"]
ANSWERED = ["invalid JSON", "cut-off JSON", "not UTF-8", "NaN is not JSON", "empty body",
            "Content-Length 10 short", "Content-Length 10 long, nothing after", "object id",
            "array id", "fractional id", "boolean id", "null id", "no method",
            "method not a string", "params a number", "no jsonrpc member", "jsonrpc 1.0",
            "a batch", "an empty batch", "a string", "a number",
            "a response with result and error"]


@pytest.mark.parametrize("name", LENIENT)
def test_lenient_headers_are_read(shared: RawServer, name: str) -> None:
    data, code, msg_id = _lenient(name)(next_id())
    expect(shared, data, code, msg_id)
    assert_answers(shared)


@pytest.mark.parametrize("name", ANSWERED)
def test_malformed_frame_is_answered(shared: RawServer, name: str) -> None:
    data, code, msg_id = _answered(name)(next_id())
    expect(shared, data, code, msg_id)
    assert_answers(shared)


@pytest.mark.parametrize("name", ["invalid JSON", "Content-Length 10 short",
                                  "Content-Length 10 long, nothing after", "object id"])
def test_request_right_behind_a_malformed_frame(shared: RawServer, name: str) -> None:
    """The malformed frame and a good request in one write: both answered, in order (a length
    too long swallows the start of the next header: the reader gives it back)."""
    data, code, msg_id = _answered(name)(next_id())
    good = next_id()
    since = len(shared.received)
    shared.send_bytes(data + frame(request(good)))
    answer = reply(shared, since, msg_id)
    assert answer["error"]["code"] == code, answer
    assert "result" in reply(shared, since, good)


def test_junk_without_a_line_end_before_a_frame(shared: RawServer) -> None:
    """Bytes that are not a header, then a frame on the same line: the frame is found."""
    msg_id = next_id()
    expect(shared, b"xyz 123" + frame(request(msg_id)), None, msg_id)


def test_misframed_answer_names_both_lengths(shared: RawServer) -> None:
    msg_id = next_id()
    body = request(msg_id)
    answer = expect(shared, frame(body, len(body) - 10), INVALID_REQUEST, msg_id)
    message = answer["error"]["message"]
    assert f"Content-Length {len(body) - 10}" in message and str(len(body)) in message, message


def test_slow_writer_is_not_judged(shared: RawServer) -> None:
    """A body that pauses mid-way for longer than the reader's patience with a short one is
    waited for: only a complete message that stops short of its length is judged."""
    msg_id = next_id()
    body = request(msg_id)
    since = len(shared.received)
    shared.send_bytes(frame(body)[: -len(body) // 2])
    time.sleep(QUIET_S * 2)  # the client's pause (what is tested), not a wait for the server
    assert not [m for m in shared.received[since:] if "method" not in m], shared.received[since:]
    shared.send_bytes(frame(body)[-len(body) // 2:])
    assert "result" in reply(shared, since, msg_id)


def test_second_initialize_is_refused(shared: RawServer) -> None:
    """initialize once only: a second one (asking for trust the first did not give) gets
    -32600 and changes nothing."""
    msg_id = next_id()
    params = {"processId": os.getpid(), "rootUri": None, "capabilities": {},
              "initializationOptions": {"trusted": True}}
    expect(shared, frame(request(msg_id, method="initialize", params=params)),
           INVALID_REQUEST, msg_id)
    since = len(shared.received)
    info_id = next_id()
    shared.send_bytes(frame(request(info_id)))
    assert reply(shared, since, info_id)["result"]["trusted"] is False


def test_internal_errors_carry_no_traceback() -> None:
    """A handler that fails: its error answer has the exception's one line, not the
    traceback pygls puts in `data` (that goes to stderr). In-process: no request of the
    server's own fails on purpose, so a failing one is registered on a real server."""
    from pygls.io_ import StdoutWriter

    from torch_mlir_lens.lsp.server import create_server
    from torch_mlir_lens.lsp.wire.json_rpc import LensProtocol

    out = io.BytesIO()
    frames = read_all(frame(request(1, method="initialize", params={
        "processId": None, "rootUri": None, "capabilities": {}}))
        + frame(request(2, method="test/fail")), [])

    async def run() -> None:
        server = create_server()
        server.protocol.set_writer(StdoutWriter(out))

        @server.feature("test/fail")
        def fail(params: Any) -> None:
            raise RuntimeError("boom")

        for received in frames:
            assert isinstance(server.protocol, LensProtocol)
            deliver(server.protocol, received)
            await asyncio.sleep(0)

    asyncio.run(run())
    answers = []
    data = out.getvalue()
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        length = int(head.split(b"\r\n")[0].removeprefix(b"Content-Length: "))
        answers.append(json.loads(data[:length]))
        data = data[length:]
    failed = [a for a in answers if a.get("id") == 2]
    assert failed and failed[0]["error"]["code"] == -32603, answers
    assert failed[0]["error"]["message"] == "RuntimeError: boom", failed
    assert_no_traceback(failed[0])


# -- frames that end the server ------------------------------------------------------------

ENDED = {
    "Content-Length not a number": b"Content-Length: abc\r\n\r\n" + request(1),
    "Content-Length negative": b"Content-Length: -5\r\n\r\n" + request(1),
    "no Content-Length": b"Content-Type: application/vscode-jsonrpc\r\n\r\n" + request(1),
    "no headers at all": request(1) + b"\r\n",
    "two different Content-Lengths": (b"Content-Length: 10\r\nContent-Length: 12\r\n\r\n"
                                      + request(1)),
    "Content-Length over the limit": b"Content-Length: %d\r\n\r\n{}" % 2**40,
    "endless junk without a line end": b"x" * (128 * 1024),
}


@pytest.mark.parametrize("name", list(ENDED))
def test_unframeable_input_ends_the_server(fresh: Callable[[], RawServer], name: str) -> None:
    server = fresh()
    server.sample_processes()
    server.send_bytes(ENDED[name])
    code = server.wait_exit(DEADLINE_S)
    assert code is not None, f"{name}: the server neither answered nor exited"
    assert code != 0, code
    procs.wait_until(lambda: "\n" in server.stderr_log.text().partition(STOP_LINE)[2],
                     DEADLINE_S, "the server's last stderr line")
    lines = [ln for ln in server.stderr_log.text().splitlines() if ln.startswith(STOP_LINE)]
    assert len(lines) == 1, server.stderr_log.text()[-2000:]
    assert not server.stderr_log.tracebacks, server.stderr_log.tracebacks[0]
    assert not server.garbage, bytes(server.garbage[:300])
    procs.wait_until(lambda: not any(procs.alive(p) for p in server.seen_pids), DEADLINE_S,
                     "the server's children to end with it")


def test_input_ending_mid_frame_ends_the_server(fresh: Callable[[], RawServer]) -> None:
    server = fresh()
    server.sample_processes()
    server.send_bytes(b"Content-Length: 500\r\n\r\n{\"jsonrpc\": ")
    server.close_stdin()
    assert server.wait_exit(DEADLINE_S) == 1
    assert STOP_LINE in server.stderr_log.text()


# -- the reader alone: chunking does not change what is read -------------------------------

class Chunks:
    """Input cut into the given pieces, then its end (a pipe that delivers them one by one);
    a None piece is a pause: the reader's time-out passes with nothing new."""

    def __init__(self, data: bytes, cuts: list[int]) -> None:
        bounds = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
        self.pieces: list[bytes | None] = [
            data[a:b] for a, b in itertools.pairwise(bounds) if b > a]

    async def more(self, timeout: float | None) -> bytes | None:
        while self.pieces and self.pieces[0] is None and timeout is None:
            self.pieces.pop(0)  # a reader without a time-out waits the pause out
        return self.pieces.pop(0) if self.pieces else b""


def read_all(data: bytes, cuts: list[int], pauses: list[bytes | None] | None = None
             ) -> list[Received]:
    """What the reader makes of `data` cut at `cuts` (or of the pieces `pauses`)."""
    async def run() -> list[Received]:
        source = Chunks(data, cuts)
        if pauses is not None:
            source.pieces = list(pauses)
        reader = FrameReader(source)
        out = []
        while (item := await reader.next()) is not None:
            out.append(item)
        return out
    return asyncio.run(run())


def test_reader_result_does_not_depend_on_chunking() -> None:
    bodies = [request(i) for i in range(4)]
    stream = (frame(bodies[0]) + b"junk\r\ncontent-length: %d\n\n" % len(bodies[1])
              + bodies[1] + frame(bodies[2], len(bodies[2]) - 7) + frame(b"{oops}")
              + frame(bodies[3], len(bodies[3]) + 9) + frame(request(4)))
    expected = read_all(stream, [])
    kinds = [type(item) for item in expected]
    assert kinds == [Message, Message, Misframed, Unreadable, Misframed, Message], expected
    assert [e.value["id"] for e in expected if isinstance(e, Message | Misframed)] == [
        0, 1, 2, 3, 4]
    for step in (1, 2, 3, 5, 8, 13, 64):
        cuts = list(range(step, len(stream), step))
        assert read_all(stream, cuts) == expected, step


def test_reader_judges_a_body_that_stops_short() -> None:
    """A pause inside a body: a complete message is judged (its length was overstated),
    the start of a non-JSON body too; a message still on its way is waited for."""
    body = request(7)
    pauses: list[bytes | None] = [frame(body, len(body) + 10), None,
                                  frame(b"hello", 20), None,
                                  frame(body)[:-5], None, body[-5:]]
    got = read_all(b"", [], pauses)
    assert got == [
        Misframed(json.loads(body), f"Content-Length {len(body) + 10} but the message ended "
                                    f"after {len(body)} bytes"),
        Unreadable("the message is not JSON (and 15 of its bytes are missing)"),
        Message(json.loads(body)),
    ], got


@pytest.mark.parametrize("data", list(ENDED.values()), ids=list(ENDED))
def test_reader_gives_up_on_unframeable_input(data: bytes) -> None:
    with pytest.raises(FramingError):
        read_all(data, [])

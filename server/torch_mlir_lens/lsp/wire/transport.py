"""The language server's stdio transport: LSP base-protocol frames in, decoded messages out.

pygls (2.1) reads stdio with `pygls.io_.run_async`, which knows one header line only, exactly
`Content-Length: N\\r\\n`: a frame it does not recognise (a lower-case header name, LF line
ends, a length that is wrong, missing or not a number) leaves it reading forever while the
client waits for an answer, a server alive and deaf. `serve` replaces that loop (and
only it): pygls's protocol object still structures, dispatches and answers each message, and
its writer still writes the answers.

Every frame ends in an answer or, once the input can no longer be split into messages, in
the server exiting with one line on stderr (`FramingError`; the client restarts it):

- Header names in any case, LF-only line ends, other headers (Content-Type): accepted.
- Lines that are not headers, and blank lines between frames: skipped (logged), up to
  `MAX_HEADER_BYTES` of them in a row.
- A body that is not UTF-8 JSON: -32700 Parse error, id null; the next frame is read as usual.
- A JSON value that is not a JSON-RPC message: refused by the protocol (-32600, json_rpc.py).
- A Content-Length that does not match its message, when the message's real end shows (a
  complete JSON object followed by nothing or by the next frame's header): -32600 Invalid
  Request with the message's id, naming both lengths; reading goes on at the next header.
  A length too long shows when the next frame arrives, or after `QUIET_S` without input.
- No Content-Length, one that is not a number, one over `MAX_FRAME_BYTES`, or a JSON body
  where a header should be: where the message ends cannot be known, so the server exits.
- The input ends inside a frame: the client is gone; the server exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
import threading
import time
import traceback
from typing import Any, BinaryIO, Protocol

log = logging.getLogger(__name__)

MAX_FRAME_BYTES = 64 * 2**20  # one message's body: a 10 MB document fits six times over
MAX_HEADER_BYTES = 64 * 2**10  # headers, or input that is not headers, before a body
QUIET_S = 1.0  # a body this long without new input, short of its Content-Length, is judged
GRACE_S = 0.25  # how long a body that does not parse waits for the rest of its message
CHUNK_BYTES = 2**20  # one read from stdin at most

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

_FIRST_VISIBLE = re.compile(rb"[^ \t\r\n]")
_HEADER = re.compile(rb"[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*(.*?)[ \t]*")
_LENGTH_HEADER = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_NUMBER = re.compile(rb"[0-9]+")
_FRAME_HEADERS = ("content-length", "content-type")


class FramingError(Exception):
    """The client's input cannot be split into messages any more: the server must exit."""


class _Outcome:
    """What one frame held; compared and shown by its fields. (Plain classes: dataclasses
    would add ~1.5 ms to the server's start, on the way to the first code lenses.)"""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._fields() == other._fields()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self._fields()!r}"


class Message(_Outcome):
    """A frame whose body is a JSON value (not yet known to be JSON-RPC)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class Unreadable(_Outcome):
    """A frame whose body is not UTF-8 JSON: answered -32700 (id null)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Misframed(_Outcome):
    """A message whose Content-Length was wrong: refused -32600, with its id when it has one."""

    __slots__ = ("reason", "value")

    def __init__(self, value: Any, reason: str) -> None:
        self.value = value
        self.reason = reason


Received = Message | Unreadable | Misframed


class ByteSource(Protocol):
    """Where frames are read from."""

    async def more(self, timeout: float | None) -> bytes | None:
        """The next bytes; b"" at the end of input; None if none came within `timeout`."""
        ...


class MessageSink(Protocol):
    """Where decoded messages go: the server's protocol (`json_rpc.LensProtocol`)."""

    def receive(self, value: Any) -> None:
        """Handle one JSON value read from the client."""
        ...

    def refuse(self, value: Any, code: int, reason: str) -> None:
        """Answer `value` (a JSON value, None when there is none) with a JSON-RPC error."""
        ...


class FrameReader:
    """Splits a byte stream into LSP base-protocol frames, following the rules above."""

    def __init__(self, source: ByteSource) -> None:
        self._source = source
        self._buf = bytearray()
        self._pos = 0  # bytes of `_buf` before this are consumed
        self._ended = False

    async def next(self) -> Received | None:
        """The next frame's content; None at the end of input between frames.

        Raises FramingError when the input cannot be split into messages any more.
        """
        length = await self._header_block()
        if length is None:
            return None
        return await self._body(length)

    # -- the buffer ---------------------------------------------------------------------

    def _available(self) -> int:
        return len(self._buf) - self._pos

    def _peek(self, n: int) -> bytes:
        return bytes(self._buf[self._pos:self._pos + n])

    def _advance(self, n: int) -> None:
        self._pos += n

    async def _more(self, timeout: float | None) -> bytes | None:
        """Append the next input to the buffer; as `ByteSource.more`."""
        if self._ended:
            return b""
        chunk = await self._source.more(timeout)
        if chunk == b"":
            self._ended = True
        elif chunk:
            if self._pos:  # drop what was consumed (only while more is awaited: rarely big)
                del self._buf[:self._pos]
                self._pos = 0
            self._buf += chunk
        return chunk

    # -- headers ------------------------------------------------------------------------

    async def _header_block(self) -> int | None:
        """The Content-Length of the next header block; None at the end of input."""
        lengths: list[bytes] = []
        started = False  # a header line was read
        skipped = 0  # bytes of lines that are not headers
        while True:
            line = await self._line(expect_header=not started)
            if line is None:
                if started:
                    raise FramingError("the input ended inside a message's headers")
                return None
            if not line.strip(b" \t"):
                if started:
                    break
                continue  # a blank line between frames
            inside = _LENGTH_HEADER.search(line)
            if inside is not None and inside.start() > 0:
                log.warning("skipped %d bytes before a Content-Length header", inside.start())
                line = line[inside.start():]
            header = _HEADER.fullmatch(line)
            if header is None:
                if not skipped:
                    log.warning("skipped input that is not an LSP header: %s", _shown(line))
                skipped += len(line) + 1
                if skipped > MAX_HEADER_BYTES:
                    raise FramingError(
                        f"{skipped} bytes of input that is not LSP headers (is the client "
                        "speaking the Language Server Protocol?)")
                continue
            started = True
            if header[1].lower() == b"content-length":
                lengths.append(header[2])
        return _content_length(lengths)

    async def _line(self, expect_header: bool) -> bytes | None:
        """The next line without its line end (CRLF or LF); None at the end of input."""
        scanned = 0
        while True:
            if expect_header:
                visible = _FIRST_VISIBLE.search(self._buf, self._pos)
                if visible is not None and self._buf[visible.start()] in b"{[":
                    raise FramingError("a message without a Content-Length header")
            end = self._buf.find(b"\n", self._pos + scanned)
            if end >= 0:
                line = bytes(self._buf[self._pos:end])
                self._pos = end + 1
                return line.removesuffix(b"\r")
            if self._available() > MAX_HEADER_BYTES:
                raise FramingError(f"no line end in {self._available()} bytes of headers")
            scanned = self._available()
            if not await self._more(None):
                return None

    # -- the body -----------------------------------------------------------------------

    async def _body(self, n: int) -> Received:
        while self._available() < n:
            chunk = await self._more(QUIET_S)
            if chunk is None:
                early = self._ended_early(n)
                if early is not None:
                    return early
            elif not chunk:
                raise FramingError(
                    f"the input ended inside a message ({self._available()} of its {n} bytes)")
        try:
            value = _decode(self._peek(n))
        except ValueError as exc:
            misframed = await self._misframed(n)
            if misframed is not None:
                return misframed
            self._advance(n)
            if isinstance(exc, UnicodeDecodeError):
                return Unreadable("the message is not UTF-8")
            return Unreadable(f"the message is not JSON ({exc})")
        self._advance(n)
        return Message(value)

    def _ended_early(self, n: int) -> Received | None:
        """The client went quiet short of its Content-Length: what came, if it is final."""
        got = self._available()
        if not got:
            return None
        body = self._peek(got)
        visible = _FIRST_VISIBLE.search(body)
        if visible is None:
            return None
        if body[visible.start()] not in b"{[":  # can never become a message
            self._advance(got)
            return Unreadable(f"the message is not JSON (and {n - got} of its bytes are missing)")
        try:
            value = _decode(body)
        except ValueError:
            return None  # a message still on its way
        self._advance(got)
        return Misframed(value, f"Content-Length {n} but the message ended after {got} bytes")

    async def _misframed(self, n: int) -> Misframed | None:
        """A body that does not parse: the message it belongs to, if its real end shows
        (the rest of it may still be on its way: waits up to GRACE_S for it)."""
        deadline = time.monotonic() + GRACE_S
        while True:
            try:
                found = _leading_message(self._peek(self._available()))
            except _Incomplete:
                pass  # the rest of it may be on its way
            else:
                if found is None or found[1] == n:  # no other end than the declared one
                    return None
                value, end = found
                self._advance(end)
                return Misframed(value, f"Content-Length {n} but the message is {end} bytes")
            left = deadline - time.monotonic()
            if left <= 0 or self._available() > n + MAX_FRAME_BYTES:
                return None
            if not await self._more(left):
                return None


def _content_length(values: list[bytes]) -> int:
    """A header block's body length, from its Content-Length values."""
    if not values:
        raise FramingError("a message without a Content-Length header")
    if len(set(values)) > 1:
        raise FramingError("a message with conflicting Content-Length headers")
    if _NUMBER.fullmatch(values[0]) is None:
        raise FramingError(f"Content-Length {_shown(values[0])} is not a number")
    digits = values[0].lstrip(b"0") or b"0"
    length = int(digits) if len(digits) <= 20 else MAX_FRAME_BYTES + 1
    if length > MAX_FRAME_BYTES:
        raise FramingError(f"Content-Length {_shown(digits)} is over the limit of "
                           f"{MAX_FRAME_BYTES} bytes")
    return length


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _decode(body: bytes) -> Any:
    """One JSON value from UTF-8 bytes; ValueError if they are not that."""
    return _DECODER.decode(body.decode("utf-8"))


class _Incomplete(Exception):
    """The JSON that starts the input is cut short: more input may complete it."""


def _leading_message(data: bytes) -> tuple[Any, int] | None:
    """(value, its length in bytes) if `data` starts with a JSON object (or array) in UTF-8
    followed by nothing but white space and the start of the next frame's header.

    Raises _Incomplete when that JSON is cut short by the end of `data`.
    """
    text = data.decode("utf-8", "surrogateescape")  # byte offsets survive the round trip
    start = len(text) - len(text.lstrip())
    if text[start:start + 1] not in ("{", "["):
        return None
    try:
        value, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        tail = text[exc.pos:].rstrip()
        if (not tail or exc.msg.startswith("Unterminated string")
                or any(word.startswith(tail) for word in ("true", "false", "null"))):
            raise _Incomplete from None
        return None
    except ValueError:  # NaN, Infinity
        return None
    rest = text[end:].lstrip()[:len(_FRAME_HEADERS[0])].lower()
    if not any(h.startswith(rest) or rest.startswith(h) for h in _FRAME_HEADERS):
        return None
    size = len(text[:end].encode("utf-8", "surrogateescape"))
    try:
        data[:size].decode("utf-8")
    except UnicodeDecodeError:
        return None
    return value, size


def _shown(raw: bytes, limit: int = 60) -> str:
    """Bytes from the client, quoted and cut for a one-line message."""
    text = raw[:limit].decode("utf-8", "replace")
    return repr(text) + ("..." if len(raw) > limit else "")


class StdoutWriter:
    """pygls's writer interface on a binary stream (pygls's own is in a module that imports
    lsprotocol, which the start-up front must not wait for: `front.py`)."""

    def __init__(self, stdout: BinaryIO) -> None:
        self._stdout = stdout

    def close(self) -> None:
        self._stdout.close()

    def write(self, data: bytes) -> None:
        self._stdout.write(data)
        self._stdout.flush()


class StreamChunks:
    """Bytes from an asyncio stream (a TCP connection) as they come."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def more(self, timeout: float | None) -> bytes | None:
        """As `ByteSource.more`."""
        try:
            return await asyncio.wait_for(self._reader.read(CHUNK_BYTES), timeout)
        except TimeoutError:
            return None


class StdinChunks:
    """Bytes from a stream as they come, read by a daemon thread one chunk per request.

    A daemon thread, not an executor's: a read blocked on a client that keeps its end open
    must not keep the process from exiting. One chunk is read ahead at most.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._wanted = threading.Semaphore(0)
        self._pending: asyncio.Future[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def more(self, timeout: float | None) -> bytes | None:
        """As `ByteSource.more`."""
        if self._pending is None:
            if self._loop is None:
                self._loop = asyncio.get_running_loop()
                threading.Thread(target=self._read, name="lsp-stdin", daemon=True).start()
            self._pending = self._loop.create_future()
            self._wanted.release()
        done, _ = await asyncio.wait({self._pending}, timeout=timeout)
        if not done:
            return None
        chunk = self._pending.result()
        self._pending = None
        return chunk

    def _read(self) -> None:
        read = getattr(self._stream, "read1", self._stream.read)
        chunk = b"-"
        while chunk:
            self._wanted.acquire()
            try:
                chunk = read(CHUNK_BYTES)
            except (OSError, ValueError):  # closed under us: the same as the end of input
                chunk = b""
            assert self._loop is not None
            with contextlib.suppress(RuntimeError):  # the loop is closed: the server is exiting
                self._loop.call_soon_threadsafe(self._deliver, chunk)

    def _deliver(self, chunk: bytes) -> None:
        if self._pending is not None and not self._pending.done():
            self._pending.set_result(chunk)


async def serve(source: ByteSource, sink: MessageSink) -> None:
    """Read frames from `source` and hand them to `sink` until the input ends.

    Raises FramingError when the input cannot be split into messages any more.
    """
    await serve_reader(FrameReader(source), sink)


async def serve_reader(reader: FrameReader, sink: MessageSink) -> None:
    """As `serve`, from a reader already in use (the start-up front hands over its own)."""
    while (received := await reader.next()) is not None:
        deliver(sink, received)
        await asyncio.sleep(0)  # what this message scheduled runs before the next is read


def deliver(sink: MessageSink, received: Received) -> None:
    """Hand one frame's content to the sink: a message, or the error that answers it."""
    if isinstance(received, Unreadable):
        sink.refuse(None, PARSE_ERROR, f"Parse error: {received.reason}")
    elif isinstance(received, Misframed):
        sink.refuse(received.value, INVALID_REQUEST, f"Invalid Request: {received.reason}")
    else:
        try:
            sink.receive(received.value)
        except BrokenPipeError:  # the client is gone
            raise
        except Exception as exc:  # a bug of ours: say so, keep serving
            log.error("could not handle a message: %s: %s", type(exc).__name__, exc)
            traceback.print_exc(file=sys.stderr)  # for the developer; not sent to the client

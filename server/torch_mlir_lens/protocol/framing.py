"""The worker pipe's frames, for both ends: a 4-byte big-endian length, then UTF-8 JSON.

The worker reads and writes them on blocking fds (`read_frame`, `write_frame`); the engine's
client on asyncio streams (`encode`, `read_frame_async`). Every frame holds one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import struct
from typing import Any


def json_number(value: float) -> float | str:
    """A float as JSON can hold it: inf and nan become the strings "inf", "-inf", "nan".

    Python's json writes them as bare Infinity/NaN, which no JSON parser (VS Code's
    included) accepts: a whole answer would be lost for one number.
    """
    return value if math.isfinite(value) else str(value)


HEADER = struct.Struct(">I")
MAX_FRAME = 1 << 31  # a sanity bound; a bigger length means a corrupted channel


def encode(data: dict[str, Any]) -> bytes:
    """One frame holding `data` (TypeError / ValueError when it is not JSON)."""
    body = json.dumps(data, separators=(",", ":")).encode("utf-8")
    return HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    """The object a frame's body holds; ValueError when it is not an object."""
    data = json.loads(body.decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("a frame must hold a JSON object")
    return data


def _read_exact(fd: int, n: int) -> bytes | None:
    """n bytes from fd, or None on EOF before the first byte; EOFError when cut mid-frame."""
    chunks: list[bytes] = []
    got = 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            if got == 0:
                return None
            raise EOFError("channel closed in the middle of a frame")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict[str, Any] | None:
    """The next frame's object from a blocking fd, or None at EOF."""
    header = _read_exact(fd, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes")
    body = _read_exact(fd, size) if size else b""
    if body is None:
        raise EOFError("channel closed in the middle of a frame")
    return decode_body(body)


def write_frame(fd: int, data: dict[str, Any]) -> None:
    """Write one frame to a blocking fd (until all of it is written)."""
    view = memoryview(encode(data))
    while view:
        written = os.write(fd, view)
        view = view[written:]


async def read_frame_async(reader: asyncio.StreamReader) -> dict[str, Any]:
    """The next frame's object from an asyncio stream (IncompleteReadError at EOF)."""
    (size,) = HEADER.unpack(await reader.readexactly(HEADER.size))
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes")
    return decode_body(await reader.readexactly(size))

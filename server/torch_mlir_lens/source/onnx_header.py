"""What an `.onnx` file says about itself without `onnx`: whether it is a model, and its graph's
name (what `check` lists, shards and reports it as: `model.onnx::<graph>`).

    graph_name(path) → str     NotAModel when the bytes are no ONNX model, OSError when unread

A model is one protobuf message (`ModelProto`). Its fields are walked, not parsed: each field's
tag says its number and how long it is, so the graph (field 7) and its name (field 2 of
`GraphProto`) are found by skipping over everything else, nodes and weights included, and the
file is mapped (`system/reading.map_region`), never read whole. A model is what the worker
takes for one (`worker/onnx/model_file.py`): an IR version, a graph and an opset; the worker
still checks the rest (its opsets, its external data) when it lowers the model.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from torch_mlir_lens.system.reading import ONNX_MODEL, map_region

# ModelProto's fields read here, and GraphProto's name.
_IR_VERSION, _GRAPH, _OPSET_IMPORT = 1, 7, 8
_GRAPH_NAME = 2
# Protobuf's wire types: varint, 64-bit, length-delimited, 32-bit (groups are not ONNX's).
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_FIXED = {_I64: 8, _I32: 4}


class NotAModel(ValueError):
    """Bytes that are no ONNX model, with the words saying why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _cut() -> NotAModel:
    return NotAModel("not an ONNX model (the file is cut short or in another format)")


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end and shift < 64:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise _cut()


def _fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """Each field of the message in `buf[start:end]`: (number, wire type, start, end of its
    value); a varint's value is its number (start and end then both hold it)."""
    pos = start
    while pos < end:
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise _cut()
        if wire == _VARINT:
            value, pos = _varint(buf, pos, end)
            yield number, wire, value, value
        elif wire == _LEN:
            length, pos = _varint(buf, pos, end)
            if pos + length > end:
                raise _cut()
            yield number, wire, pos, pos + length
            pos += length
        elif wire in _FIXED:
            if pos + _FIXED[wire] > end:
                raise _cut()
            yield number, wire, pos, pos + _FIXED[wire]
            pos += _FIXED[wire]
        else:
            raise _cut()


def _name_of_graph(buf: memoryview, start: int, end: int) -> str:
    name = ""
    for number, wire, begin, stop in _fields(buf, start, end):
        if number == _GRAPH_NAME and wire == _LEN:
            try:
                name = bytes(buf[begin:stop]).decode("utf-8")
            except UnicodeDecodeError:
                raise _cut() from None
    return name


def graph_name(path: str) -> str:
    """The name of the model's graph (the file's name when the graph has none). NotAModel for
    bytes that are no ONNX model; OSError when the file cannot be read (UnreadableFile for a
    special file, a link where one is refused, a file over the limit)."""
    buf = map_region(path, 0, None, ONNX_MODEL)
    if not len(buf):
        raise NotAModel("not an ONNX model: the file is empty")
    version = 0
    graph: tuple[int, int] | None = None
    opsets = False
    for number, wire, begin, stop in _fields(buf, 0, len(buf)):
        if number == _IR_VERSION and wire == _VARINT:
            version = begin
        elif number == _GRAPH and wire == _LEN:
            graph = (begin, stop)
        elif number == _OPSET_IMPORT and wire == _LEN:
            opsets = True
    if version <= 0 or graph is None or not opsets:
        raise NotAModel("not an ONNX model: it has no IR version, graph or opset")
    return _name_of_graph(buf, *graph) or os.path.basename(path)


__all__ = ["NotAModel", "graph_name"]

"""An `.onnx` file read as the product reads every file, and checked before anything runs.

    read_model(path) → ModelProto   (external data not loaded: weights stay in their files)

Every refusal is one located LensError (kind load-error, the file named): a file over the
size limit (refused by its size, unread), bytes that are not an ONNX model (a truncated file,
another format), an opset newer than this `onnx` knows, an external data file that is
missing, outside the model's folder or shorter than the model says. Nothing here runs a
node, and nothing hangs: the bytes come through `system/reading.py` (a FIFO or a device is
refused at once), and external data is only looked at (`stat`), never read.
"""

from __future__ import annotations

import os
from typing import Any

import onnx
from google.protobuf.message import DecodeError

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.system import reading
from torch_mlir_lens.system.reading import read_bytes


def _refused(path: str, message: str) -> LensError:
    return LensError(ErrorKind.LOAD_ERROR, message, file=path)


def read_model(path: str) -> onnx.ModelProto:
    """The model in `path`, checked (module docstring); its external data not loaded."""
    try:
        data = read_bytes(path, reading.ONNX_MODEL)
    except FileNotFoundError:
        raise _refused(path, "no such file") from None
    except OSError as exc:  # UnreadableFile says why without the path
        raise _refused(path, f"cannot read the ONNX model: {exc}") from None
    model = parse_model(path, data)
    check_opsets(path, model)
    check_external_data(path, model)
    return model


def parse_model(path: str, data: bytes) -> onnx.ModelProto:
    """The ModelProto of `data`; LensError when the bytes are not an ONNX model."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise _refused(path, "not an ONNX model (the file is cut short or in another "
                             f"format: {str(exc) or type(exc).__name__})") from None
    # Protobuf reads many byte strings as some message: a model has a version and a graph.
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        what = "the file is empty" if not data else "it has no IR version, graph or opset"
        raise _refused(path, f"not an ONNX model: {what}")
    if not model.graph.output:
        raise _refused(path, f"the ONNX graph {model.graph.name!r} has no outputs")
    return model


def check_opsets(path: str, model: onnx.ModelProto) -> None:
    """LensError for an opset of ONNX's own domain newer than this `onnx` knows (the
    importer and the shape inference would guess at its nodes)."""
    newest = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > newest:
            raise _refused(path, f"unknown opset: the model uses ONNX opset {opset.version}, "
                                 f"and the installed onnx {onnx.__version__} knows opsets up "
                                 f"to {newest} (upgrade onnx)")
        if opset.domain in ("", "ai.onnx") and opset.version < 1:
            raise _refused(path, f"unknown opset: ONNX opset {opset.version}")


def external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The initializers (main graph) whose bytes are in external data files."""
    return [t for t in model.graph.initializer
            if t.data_location == onnx.TensorProto.EXTERNAL]


def external_info(tensor: onnx.TensorProto) -> dict[str, str]:
    """An external tensor's `location`, `offset`, `length` (as the file says them)."""
    return {entry.key: entry.value for entry in tensor.external_data}


def external_path(model_path: str, tensor: onnx.TensorProto) -> str:
    """The file that holds an external tensor's bytes; LensError when the model names none or
    one outside its own folder."""
    location = external_info(tensor).get("location", "")
    base = os.path.dirname(os.path.abspath(model_path))
    target = os.path.normpath(os.path.join(base, location))
    if not location or os.path.isabs(location) or not target.startswith(base + os.sep):
        raise _refused(model_path, f"the weight {tensor.name!r} names its external data file "
                                   f"as {location!r}: only files in the model's folder are "
                                   "read")
    return target


def region(tensor: onnx.TensorProto) -> tuple[int, int | None]:
    """(offset, length or None) of an external tensor in its file."""
    info = external_info(tensor)
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else None
    except ValueError:
        raise LensError(ErrorKind.LOAD_ERROR, f"the weight {tensor.name!r} has an external "
                                              f"data offset or length that is not a number: "
                                              f"{info}") from None
    return offset, length


def check_external_data(path: str, model: onnx.ModelProto) -> None:
    """Each external data file the model names exists, is a regular file in its folder and
    holds the bytes the model says (looked at, not read)."""
    sizes: dict[str, int] = {}
    for tensor in external_tensors(model):
        file = external_path(path, tensor)
        name = os.path.basename(file)
        if file not in sizes:
            try:
                reading.read_head(file, 0, reading.ONNX_DATA)
                sizes[file] = os.stat(file).st_size
            except FileNotFoundError:
                raise _refused(path, f"the external data file {name!r} of the weight "
                                     f"{tensor.name!r} is missing (expected beside the "
                                     "model)") from None
            except OSError as exc:
                raise _refused(path, f"the external data file {name!r}: {exc}") from None
        offset, length = region(tensor)
        end = offset + (length if length is not None else 0)
        if offset < 0 or end > sizes[file]:
            raise _refused(path, f"the external data file {name!r} holds "
                                 f"{reading.size_text(sizes[file])}, but the weight "
                                 f"{tensor.name!r} is at bytes {offset}..{end}: the file is "
                                 "cut short")


def weight_bytes(model: onnx.ModelProto) -> int:
    """Bytes of weights the model holds in itself (external data not counted)."""
    return sum(len(t.raw_data) for t in model.graph.initializer)


def opsets_of(model: onnx.ModelProto) -> dict[str, int]:
    """domain ("" for ONNX's own) → the model's opset version of it."""
    return {("" if o.domain == "ai.onnx" else o.domain): int(o.version)
            for o in model.opset_import}


def default_opset(model: onnx.ModelProto) -> int:
    """The model's opset of ONNX's own operators (0 when it imports none)."""
    return opsets_of(model).get("", 0)


__all__: list[Any] = ["default_opset", "external_path", "external_tensors", "opsets_of",
                      "read_model", "region", "weight_bytes"]

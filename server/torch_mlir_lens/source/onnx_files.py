"""`.onnx` files as the product takes them: which paths are ONNX models, and what stands for a
model's content where a Python file's text would (the engine's cache key).

No `onnx` import: the server and the CLI never parse a model (the worker does).
"""

from __future__ import annotations

import os

from torch_mlir_lens.system.reading import (
    ONNX_MODEL,
    UnreadableFile,
    digest_of,
    read_head,
    too_large,
)

SUFFIX = ".onnx"
STAND_IN_PREFIX = "# onnx model sha256:"
# The module of a job on an `.onnx` file that names none: the file's one graph, whatever its
# name (a job may also name the graph; another name is refused with the graph's).
THE_GRAPH = "*"


def is_onnx(path: str | None) -> bool:
    """Whether a path (or URI) names an ONNX model file."""
    return bool(path) and str(path).lower().endswith(SUFFIX)


def stand_in_text(path: str) -> str:
    """What stands for the model's content in a job (`ModuleJob.text`): its digest, so that a
    result is keyed by the model's bytes, never its path. OSError when the file cannot be
    read (UnreadableFile for a device, a FIFO, a folder, a file over the limit)."""
    read_head(path, 0, ONNX_MODEL)  # a special file is refused before any digest
    size = os.stat(path).st_size
    if size > ONNX_MODEL.limit:
        raise UnreadableFile(too_large(size, ONNX_MODEL.limit, ONNX_MODEL))
    digest = digest_of(path, ONNX_MODEL)
    if digest is None:
        raise UnreadableFile("cannot be read")
    return STAND_IN_PREFIX + digest

"""One reader of untrusted bytes (docs/security.md, "Bounded inputs"): every file the product
reads goes through `system/reading.py` (regular files only, opened without blocking, bounded
per kind). Here every call that opens or reads a file in the server's code is listed, and any
outside the reader fails, unless it writes (the product's own files) or reads a pipe the
product made — each of those named with its reason.
"""

from __future__ import annotations

import ast
import os
import stat
import time
from pathlib import Path

import pytest

from torch_mlir_lens.system import reading

PACKAGE = Path(reading.__file__).resolve().parents[1]

# Calls that open or read a file by path (a name, or `module.attr`), and any `.attr(...)`
# method call whose name only a file object or a path has.
OPENERS = {"open", "os.open", "os.fdopen", "io.open", "json.load", "tomllib.load",
           "marshal.load", "pickle.load", "torch.load", "np.load", "numpy.load",
           "linecache.getline", "linecache.getlines", "tokenize.open",
           # ONNX's own readers (a model, its external data, a test tensor): never used, the
           # bytes come through the reader (worker/onnx/model_file.py, reference.py)
           "onnx.load", "onnx.load_model", "onnx.load_tensor", "onnx.load_external_data_for_model",
           "onnx.load_from_string", "onnx.shape_inference.infer_shapes_path"}
PATH_METHODS = {"read_text", "read_bytes", "open"}

# (file, call) → why it is not a read of untrusted bytes.
ALLOWED = {
    ("system/reading.py", "os.open"): "the reader itself",
    ("system/disk_cache.py", "os.open"): "an entry's folder (O_DIRECTORY|O_NOFOLLOW), to remove "
                                         "an entry relative to it",
    ("system/atomic_write.py", "os.open"): "writes a new temporary file (O_CREAT|O_EXCL)",
    ("system/atomic_write.py", "os.fdopen"): "writes the temporary file it created",
    ("system/cache_key.py", "os.open"): "creates the key file (O_CREAT|O_EXCL, 0600)",
    ("system/cache_key.py", "os.fdopen"): "writes the key file it created",
    ("worker/main.py", "os.open"): "/dev/null for the worker's standard streams",
    ("cli/dispatch.py", "os.open"): "/dev/null for stdout once its reader left (| head)",
    ("worker/ir/crash_guard.py", "os.fdopen"): "a pipe to a forked child the worker made",
    ("engine/worker_client/channel.py", "os.fdopen"): "the pipes to the worker it spawned",
    ("lsp/features/sync.py", ".open"): "the document store's `open` (no file)",
    ("lsp/features/notebook_sync.py", ".open"): "the document store's `open` (no file)",
    ("worker/inputs/values.py", "torch.load"): "reads bytes the reader read (io.BytesIO)",
}


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id if func.id in OPENERS else None
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and f"{func.value.id}.{func.attr}" in OPENERS:
            return f"{func.value.id}.{func.attr}"
        if func.attr in PATH_METHODS:
            return f".{func.attr}"
    return None


def file_reads() -> list[tuple[str, str, int]]:
    """(file, call, line) of every opening or reading call in the server's code."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Call) and (name := _call_name(node)) is not None:
                found.append((rel, name, node.lineno))
    return found


def test_every_file_is_read_through_the_one_reader() -> None:
    outside = [f"{file}:{line}: {call}(...)" for file, call, line in file_reads()
               if (file, call) not in ALLOWED]
    assert outside == [], ("read through system/reading.py instead (or allow a write here, "
                           "with its reason):\n" + "\n".join(outside))


def test_the_scan_sees_a_read_outside_the_reader(tmp_path: Path) -> None:
    tree = ast.parse("import json\nwith open(p) as f:\n    json.load(f)\nq.read_bytes()\n")
    names = [_call_name(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert {"open", "json.load", ".read_bytes"} <= set(names)


@pytest.mark.parametrize("kind", [reading.SOURCE, reading.BASELINE, reading.REPORT,
                                  reading.PROJECT_FILE, reading.CACHE_ENTRY])
def test_special_files_are_refused_at_once(tmp_path: Path, kind: reading.Kind) -> None:
    """/dev/zero (endless), a FIFO with no writer (blocks), a folder: refused with what it
    is, within a second, whatever the kind."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in (("/dev/zero", "a character device"), (fifo, "a pipe (FIFO)"),
                       (tmp_path, "a folder")):
        started = time.monotonic()
        with pytest.raises(reading.UnreadableFile, match=what.replace("(", r"\(").replace(
                ")", r"\)")):
            reading.read_bytes(path, kind)
        assert time.monotonic() - started < 1.0


def test_a_link_to_dev_zero_is_refused_and_a_link_in_a_cache_at_all(tmp_path: Path) -> None:
    link = tmp_path / "baseline.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(reading.UnreadableFile, match="character device"):
        reading.read_bytes(link, reading.BASELINE)
    real = tmp_path / "entry"
    real.write_bytes(b"data")
    planted = tmp_path / "planted"
    planted.symlink_to(real)
    assert reading.read_bytes(planted, reading.SOURCE) == b"data"  # a user's link: followed
    with pytest.raises(reading.UnreadableFile, match="symbolic link"):
        reading.read_bytes(planted, reading.CACHE_ENTRY)  # in a folder the product owns: not


def test_each_kind_has_its_limit(tmp_path: Path) -> None:
    """A 250 MB pyproject.toml (sparse: no disk used) is refused by its size, unread."""
    big = tmp_path / "pyproject.toml"
    with open(big, "wb") as f:  # the test's own file
        f.truncate(250_000_000)
    started = time.monotonic()
    with pytest.raises(reading.UnreadableFile, match=r"project file of up to 1\.0 MB"):
        reading.read_bytes(big, reading.PROJECT_FILE)
    assert time.monotonic() - started < 0.5
    assert stat.S_ISREG(big.stat().st_mode)
    assert reading.digest_of(big, reading.PROJECT_FILE) is None

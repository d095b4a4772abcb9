"""What the engine sends and caches a job under: its text filled in, its content key."""

from __future__ import annotations

import os

from torch_mlir_lens.discovery.fingerprint import job_fingerprint
from torch_mlir_lens.engine.cache import content_key
from torch_mlir_lens.protocol.jobs import Job, ModuleJob
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.source import onnx_files
from torch_mlir_lens.system.reading import INPUTS_FILE, digest_of, read_text


def filled(job: ModuleJob) -> ModuleJob:
    """The job's common fields with its text and the module's fingerprint filled in.

    The text is read from disk when the caller gave none, so the cache key is the content,
    not the path. The fingerprint (usually cached already from the document) is sent along so
    the worker does not parse the file again to key its exported programs.
    """
    out = job.module_fields()
    out.path = path = os.path.abspath(job.path)
    if out.text is None and onnx_files.is_onnx(path):
        # A model is not text: its digest stands for it (the worker reads the model itself).
        try:
            out.text = onnx_files.stand_in_text(path)
        except FileNotFoundError as exc:
            raise LensError(ErrorKind.LOAD_ERROR, f"no such file: {path}", file=path) from exc
        except OSError as exc:
            raise LensError(ErrorKind.LOAD_ERROR, f"cannot read {path}: {exc}",
                            file=path) from exc
    if out.text is None:
        try:
            out.text = read_text(path)
        except FileNotFoundError as exc:
            raise LensError(ErrorKind.LOAD_ERROR, f"no such file: {path}", file=path) from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise LensError(ErrorKind.LOAD_ERROR, f"cannot read {path}: {exc}",
                            file=path) from exc
    out.fingerprint = job_fingerprint(out.to_json(), out.text)
    return out


def cache_key(job: Job) -> str:
    """The key of a job's answer: its fields, the module's fingerprint standing for the text
    (an edit elsewhere in the file keeps the result) and an inputs file's content."""
    parts = job.to_json()
    if isinstance(parts.get("text"), str):
        sent = parts.pop("fingerprint", None)
        parts["text"] = sent if isinstance(sent, str) else job_fingerprint(parts, parts["text"])
    if isinstance(parts.get("inputs_file"), str):
        # A re-saved inputs file must not be answered from the cache.
        parts["inputs_file_sha"] = digest_of(parts["inputs_file"], INPUTS_FILE)
    return content_key(parts)

"""Which exported program a module job needs: one key, computed alike by both processes.

The worker caches a few exported programs under this key and lists the keys it holds in every
reply (`protocol.jobs.Reply.programs`); the engine computes the key of a job it schedules with
the same function, to know whether the worker still has to export it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from typing import Any

from torch_mlir_lens.discovery.fingerprint import job_fingerprint
from torch_mlir_lens.protocol.rewrite_results import at_export
from torch_mlir_lens.system.reading import INPUTS_FILE, digest_of


def file_digest(path: str | None) -> str | None:
    """Content hash of an inputs file, so replacing it re-exports."""
    if not path:
        return None
    return digest_of(path, INPUTS_FILE)  # bounded, regular files only


def folder_stamp(path: str) -> list[tuple[str, int, int]]:
    """(name, mtime_ns, size) of the .py files next to `path`."""
    stamps = []
    try:
        with os.scandir(os.path.dirname(path)) as entries:
            for entry in entries:
                if entry.name.endswith(".py") and entry.path != path:
                    with contextlib.suppress(OSError):
                        st = entry.stat()
                        stamps.append((entry.name, st.st_mtime_ns, st.st_size))
    except OSError:
        pass
    return sorted(stamps)


def program_key(job: dict[str, Any], text: str) -> str:
    """Everything that decides the exported program of a module job, hashed.

    `text` is the file's text (the job's, or the file on disk); the job's `fingerprint`, when
    sent, stands for it.
    """
    path = os.path.abspath(str(job.get("path") or ""))
    sent = job.get("fingerprint")
    parts = {
        "path": path,
        # The module's fingerprint, not the whole text: an edit to another module of the
        # file reuses this module's exported program. The engine sends the one it computed.
        "text": sent if isinstance(sent, str) and sent else job_fingerprint(job, text),
        "module": job.get("module"),
        "inputs": job.get("inputs"),
        "inputs_file": job.get("inputs_file"),
        "inputs_file_sha": file_digest(job.get("inputs_file")),
        "init": job.get("init"),
        "settings_inputs": job.get("settings_inputs") or {},
        "workspace": job.get("workspace"),
        "strict": bool(job.get("strict", False)),
        **({"inline_blocks": True} if job.get("inline_blocks") else {}),
        # Pins and the specialised export act at export (worker/rewrites/pins.py,
        # specialize.py), unlike the other rewrites: a job's `pin.<name>` or
        # `export.specialize` is a program of its own (a comment's is in the fingerprint's text).
        **({"pins": pins} if (pins := sorted(str(r) for r in job.get("rewrites") or []
                                             if at_export(str(r)))) else {}),
        # Sibling files the module may import: an edit to one must re-export.
        "siblings": folder_stamp(path),
    }
    blob = json.dumps(parts, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()

"""Baselines: the findings a project accepts today, so CI fails only on new ones.

An entry is (module file, module, rule), e.g. ("models/heads.py", "QuantileHead",
"tosa/aten.erfinv"): moving code around, adding lines or calling the same op again in that
module keeps it baselined; the op appearing in another module, or for another backend, is new.
The file is JSON, sorted, one entry per line-ish, so its diffs review well.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from torch_mlir_lens.repo_check.findings import Finding

VERSION = 1
DEFAULT_NAME = "torch-mlir-lens-baseline.json"

Key = tuple[str, str, str]


class BaselineError(Exception):
    """A baseline file that cannot be read or is not one of ours."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


@dataclass
class Baseline:
    """The accepted findings, by key."""

    path: str
    keys: set[Key]

    def apply(self, findings: list[Finding]) -> list[Key]:
        """Mark baselined findings; return the entries nothing matched any more (fixed)."""
        seen: set[Key] = set()
        for f in findings:
            if f.baseline_key in self.keys:
                f.baselined = True
                seen.add(f.baseline_key)
        return sorted(self.keys - seen)


def read_baseline(path: str) -> Baseline:
    """Load a baseline written by `--write-baseline`."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError as exc:
        raise BaselineError("no such baseline file (create it with --write-baseline)",
                            path) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"cannot read the baseline: {exc}", path) from exc
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list) or data.get("version") != VERSION:
        raise BaselineError(f"not a torch-mlir-lens baseline (version {VERSION})", path)
    keys: set[Key] = set()
    for e in entries:
        if not (isinstance(e, dict) and all(isinstance(e.get(k), str)
                                            for k in ("file", "module", "rule"))):
            raise BaselineError(f"malformed entry {e!r}", path)
        keys.add((e["file"], e["module"], e["rule"]))
    return Baseline(os.path.abspath(path), keys)


def write_baseline(path: str, findings: list[Finding]) -> int:
    """Write every finding's key to `path` (atomically); return the number of entries."""
    keys = sorted({f.baseline_key for f in findings})
    entries = [{"file": k[0], "module": k[1], "rule": k[2]} for k in keys]
    body = {"version": VERSION, "tool": "torch-mlir-lens", "entries": entries}
    text = json.dumps(body, indent=1) + "\n"
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return len(entries)

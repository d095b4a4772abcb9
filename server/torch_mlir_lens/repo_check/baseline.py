"""Baselines: the findings a project accepts today, so CI fails only on new ones.

An entry is (module file, module, rule), e.g. ("models/heads.py", "QuantileHead",
"tosa/aten.erfinv"): moving code around, adding lines or calling the same op again in that
module keeps it baselined; the op appearing in another module, or for another backend, is new.
In an ONNX model (one graph) a finding at a node is keyed by the node instead, its name or, for
a node without one, its position: ("models/resnet.onnx", node "conv1", "tosa/onnx.Conv"),
written `{"file", "node": "conv1", "rule"}` (`"node": "#3"`), so a node keeps its entry when
nodes are added around it. The file is JSON, sorted, one entry per line-ish, so its diffs review
well.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from torch_mlir_lens.findings import NODE_KEY, Finding
from torch_mlir_lens.repo_check.outputs import write_text_atomically
from torch_mlir_lens.repo_check.plan import ModuleTask
from torch_mlir_lens.source.onnx_files import is_onnx
from torch_mlir_lens.system.reading import BASELINE, read_text

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
        # Bounded, regular files only: a committed baseline may be a link to /dev/zero.
        data = json.loads(read_text(path, BASELINE))
    except FileNotFoundError as exc:
        raise BaselineError("no such baseline file (create it with --write-baseline)",
                            path) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaselineError(f"cannot read the baseline: {exc}", path) from exc
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list) or data.get("version") != VERSION:
        raise BaselineError(f"not a torch-mlir-lens baseline (version {VERSION})", path)
    return Baseline(os.path.abspath(path), {_key(e, path) for e in entries})


def _key(entry: object, path: str) -> Key:
    """An entry's key: (file, module, rule), or (file, NODE_KEY + node, rule)."""
    if isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("file", "rule")):
        if isinstance(entry.get("module"), str) and "node" not in entry:
            return (entry["file"], entry["module"], entry["rule"])
        if isinstance(entry.get("node"), str) and "module" not in entry:
            return (entry["file"], NODE_KEY + entry["node"], entry["rule"])
    raise BaselineError(f"malformed entry {entry!r}", path)


def _entry(key: Key) -> dict[str, str]:
    file, where, rule = key
    if where.startswith(NODE_KEY):
        return {"file": file, "node": where.removeprefix(NODE_KEY), "rule": rule}
    return {"file": file, "module": where, "rule": rule}


def write_baseline(path: str, findings: list[Finding], keep: set[Key] | None = None) -> int:
    """Write every finding's key, and the entries of `keep`, to `path` (atomically); return
    the number of entries."""
    keys = sorted({f.baseline_key for f in findings} | (keep or set()))
    entries = [_entry(k) for k in keys]
    body = {"version": VERSION, "tool": "torch-mlir-lens", "entries": entries}
    write_text_atomically(path, json.dumps(body, indent=1) + "\n")
    return len(entries)


def of_modules(tasks: Iterable[ModuleTask]) -> Callable[[Key], bool]:
    """Whether an entry is of one of these modules (`ModuleTask`s): its file and module, or
    any entry of an ONNX model among them (a model's one graph is the whole file)."""
    modules = {(t.rel, t.name) for t in tasks}
    models = {t.rel for t in tasks if is_onnx(t.rel)}
    return lambda k: (k[0], k[1]) in modules or k[0] in models


@dataclass
class Update:
    """What `update_baseline` did, for the line that says so."""

    written: int  # entries of the modules this run checked
    kept: set[Key]  # entries of files the run did not check, left as they were
    dropped: set[Key]  # entries of files that no longer exist

    def describe(self, path: str) -> str:
        """`wrote FILE (N entries)`, and which entries outside the run were kept or dropped."""
        text = f"wrote {path} ({_count(self.written, 'entry')} of the modules checked"
        if self.kept:
            files = _count(len({k[0] for k in self.kept}), "file")
            text += f"; kept {_count(len(self.kept), 'entry')} of {files} this run did not check"
        if self.dropped:
            files = _count(len({k[0] for k in self.dropped}), "file")
            text += (f"; dropped {_count(len(self.dropped), 'entry')} of {files} gone from "
                     "the repository")
        return text + ")"


def _count(n: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"


def update_baseline(path: str, findings: list[Finding], checked: Callable[[Key], bool],
                    root: str) -> Update:
    """Write the findings of a run to the baseline at `path`, replacing the entries the run
    checked (`checked(key)`) and keeping the others, so a run over part of the repository
    loses nothing; entries of files gone from `root` are dropped. BaselineError when the
    existing file is not a baseline; OSError when it cannot be written."""
    old: set[Key] = set()
    if os.path.exists(path):
        old = read_baseline(path).keys
    outside = {k for k in old if not checked(k)}
    dropped = {k for k in outside if not os.path.exists(os.path.join(root, k[0]))}
    kept = outside - dropped
    written = write_baseline(path, findings, kept) - len(kept)
    return Update(written, kept, dropped)

"""What a report says about the run that made it, and whether reports belong in one `merge`.

Every report (JSON `config` and `plan`, SARIF `runs[0].properties.torchMlirLens`) records the
settings that decide its findings (time-out, memory limit, strict export, example inputs,
--require-inputs, the baseline's entries) and the module list the run split into shards
(its length and a digest of its `file::Module` keys, before sharding). `merge` accepts
reports only when they come from one torch-mlir-lens version, one set of targets, one
configuration and one module list, and are its shards 1..N exactly once each: a lost shard,
or one of another run, must never turn the gate green.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


class MergeMismatch(ValueError):
    """Reports that do not make one run (the message names what differs and where)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def plan_json(module_keys: Iterable[str]) -> dict[str, Any]:
    """The module list of a whole run (before sharding): its length and digest."""
    keys = list(module_keys)
    return {"modules": len(keys), "digest": _digest(keys)}


def config_json(*, timeout_s: float, memory_limit_mb: int, strict_export: bool,
                require_inputs: bool, example_inputs: dict[str, str],
                baseline_keys: Iterable[tuple[str, str, str]] | None) -> dict[str, Any]:
    """The settings that decide a run's findings, as reports record them."""
    return {
        "timeoutSeconds": timeout_s, "memoryLimitMb": memory_limit_mb,
        "strictExport": strict_export, "requireInputs": require_inputs,
        "exampleInputs": dict(sorted(example_inputs.items())),
        "baseline": None if baseline_keys is None else _digest(sorted(baseline_keys)),
    }


@dataclass(frozen=True)
class RunIdentity:
    """One report as `merge` compares it."""

    source: str  # the report's file name, for messages
    version: str
    targets: tuple[str, ...]
    config: dict[str, Any] | None
    plan: dict[str, Any] | None
    shards: tuple[tuple[int, int], ...]


def _differ(what: str, ids: list[RunIdentity], show: Any) -> MergeMismatch:
    seen: dict[str, list[str]] = {}
    for i in ids:
        seen.setdefault(show(i), []).append(i.source)
    parts = "; ".join(f"{', '.join(sources)}: {value}" for value, sources in seen.items())
    return MergeMismatch(f"the reports come from different {what} ({parts})")


def check_together(ids: list[RunIdentity]) -> None:
    """Raise MergeMismatch unless the reports are the shards of one run (one report of a
    whole run is fine too: merging it only converts its format)."""
    if len(ids) == 1 and not ids[0].shards:
        return
    if len({i.version for i in ids}) > 1:
        raise _differ("torch-mlir-lens versions", ids, lambda i: i.version)
    if len({tuple(sorted(i.targets)) for i in ids}) > 1:
        raise _differ("targets", ids, lambda i: ", ".join(i.targets))
    missing = [i.source for i in ids if i.config is None or i.plan is None]
    if missing:
        raise MergeMismatch(f"{', '.join(missing)}: no record of the run's settings and module "
                            "list (written by an older torch-mlir-lens? check again)")
    keys = sorted({k for i in ids for k in (i.config or {})})
    for key in keys:
        if len({json.dumps((i.config or {}).get(key), sort_keys=True) for i in ids}) > 1:
            raise _differ(f"settings ({key})", ids,
                          lambda i, k=key: json.dumps((i.config or {}).get(k)))
    if len({json.dumps(i.plan, sort_keys=True) for i in ids}) > 1:
        raise _differ("module lists", ids, _module_list)
    _check_shards(ids)


def _module_list(i: RunIdentity) -> str:
    plan = i.plan or {}
    n = plan.get("modules")
    return f"{n} module{'' if n == 1 else 's'} [{str(plan.get('digest'))[:8]}]"


def _check_shards(ids: list[RunIdentity]) -> None:
    unsharded = [i.source for i in ids if not i.shards]
    if unsharded:
        raise MergeMismatch(f"{', '.join(unsharded)}: not a shard (--shard I/N); merge "
                            "combines the shards of one run")
    shards = [s for i in ids for s in i.shards]
    counts = sorted({n for _, n in shards})
    if len(counts) != 1:
        raise _differ("splits", ids, lambda i: ", ".join(f"{a}/{n}" for a, n in i.shards))
    (n,) = counts
    indices = sorted(a for a, _ in shards)
    missing = sorted(set(range(1, n + 1)) - set(indices))
    if missing:
        raise MergeMismatch(f"incomplete merge: missing shards {missing} of {n}")
    if len(indices) != len(set(indices)):
        raise MergeMismatch(f"incomplete merge: repeated shards {indices} of {n}")


def check_modules_once(modules: Iterable[str]) -> None:
    """No module in two reports."""
    seen: set[str] = set()
    for m in modules:
        if m in seen:
            raise MergeMismatch(f"module {m} appears in two reports")
        seen.add(m)

"""The verdict rule: how one module fared at one backend, in one place for every front end.

`check` (one file or a repository), the editor's verdict lens and the hover's verdict line all
read a LowerResult the same way: it is ok when it lowered and no op was unsupported; otherwise
the unsupported ops are to blame, or, when there are none, the error that stopped the lowering.
Beside the verdict, reports record how many ops the backend's IR has and how many of them it
rejected (`op_counts`), for the share of ops that lower.

Torch-free (the language server imports it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LowerResult
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.targets import BACKENDS

# A rejected op in a partial lowering: kept in place as a call to a function named after it
# (worker/culprits/partial.py), `call @torch.aten.erfinv(...)`.
_KEPT_OP = re.compile(r"\bcall @\"?torch\.")


@dataclass(frozen=True)
class BackendVerdict:
    """One module at one backend."""

    ok: bool
    culprits: tuple[LensDiagnostic, ...]  # the unsupported-op errors, one per cause and line
    error: LensDiagnostic | None  # the first error that is not an unsupported op

    @property
    def failed(self) -> bool:
        """Failed as a whole: not ok, and no unsupported op to blame (export, pipeline...)."""
        return not self.ok and not self.culprits


def backend_verdict(result: LowerResult) -> BackendVerdict:
    """The verdict of one lowering result."""
    found = tuple(culprits.culprit_diagnostics(result.diagnostics))
    error = next((d for d in result.diagnostics
                  if d.kind != ErrorKind.UNSUPPORTED_OP and d.severity == "error"), None)
    return BackendVerdict(ok=result.ok and not found, culprits=found, error=error)


def verdict_json(result: LowerResult) -> dict[str, Any]:
    """The verdict as `check --json` and repository reports write it for one target. In an
    ONNX model a line is a node's position: its node is beside it (`node`, `error_node`)."""
    verdict = backend_verdict(result)
    data: dict[str, Any] = {
        "ok": verdict.ok,
        "unsupported": [_with_node({"op": d.op, "line": d.line, "cause": culprits.cause_of(d)},
                                   "node", d) for d in verdict.culprits],
        "error": verdict.error.message if verdict.error else None,
        "error_line": verdict.error.line if verdict.error else None,
    }
    ops = op_counts(result)
    if ops is not None:
        data["ops"] = ops
    return _with_node(data, "error_node", verdict.error)


def op_counts(result: LowerResult) -> dict[str, int] | None:
    """`{"total", "rejected"}`: the ops of a backend's IR (its `stats`), and those of them it
    rejected, each kept as a call in a partial lowering; None without the backend's IR (the
    lowering stopped before it) or for a target that is no torch-mlir backend."""
    total = result.stats.get("ops")
    if (result.target not in BACKENDS or not isinstance(total, int) or isinstance(total, bool)
            or not (result.ok or result.partial)):
        return None
    rejected = len(_KEPT_OP.findall(result.ir)) if result.partial else 0
    return {"total": total, "rejected": min(rejected, total)}


def _with_node(data: dict[str, Any], key: str, diag: LensDiagnostic | None) -> dict[str, Any]:
    if diag is not None and diag.node is not None:
        data[key] = diag.node.to_json()
    return data

"""How a finding says what it says: one wording for the editor, `check` and its reports.

An op a backend rejects reads "`torch.roll` (decomposed to `aten.slice.Tensor`) cannot be
lowered to TOSA (why)", naming every backend it fails when the same cause fails several
(`merged_message`), and the library line it is made at when that is not the user's
("(in modeling_gpt2.py:211)").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from torch_mlir_lens.findings.finding import Related
from torch_mlir_lens.protocol.onnx_graphs import OnnxNode
from torch_mlir_lens.rules.targets import BACKENDS, target_title

MAX_NAMED = 3  # library lines named in a message; the related lines list them all


def ordered_targets(targets: Iterable[str]) -> list[str]:
    """Backends in their usual order (Linalg, TOSA, StableHLO), others after them."""
    return sorted(set(targets), key=lambda t: (BACKENDS.index(t) if t in BACKENDS
                                               else len(BACKENDS), t))


def reasons_text(reasons: Mapping[str, str]) -> str:
    """" (why)" when every backend says the same, else each named; "" without any."""
    said = {t: why for t, why in reasons.items() if why}
    if not said:
        return ""
    if len(set(said.values())) == 1:
        return f" ({next(iter(said.values()))})"
    return " (" + "; ".join(f"{target_title(t)}: {why}" for t, why in said.items()) + ")"


def op_message(cause: str | None, op: str, targets: Sequence[str], *, detail: str = "",
               reasons: Mapping[str, str] | None = None) -> str:
    """"`aten.erfinv` cannot be lowered to Linalg, TOSA" (+ the backend's own words when no
    cause was worded and one backend said them, + why)."""
    names = ", ".join(target_title(t) for t in ordered_targets(targets))
    message = f"{cause or op} cannot be lowered to {names or 'a checked backend'}"
    detail = detail.strip()
    if detail and cause is None and len(targets) == 1 and detail != message \
            and "cannot be lowered" not in detail:
        message += f": {detail}"
    return message + reasons_text(reasons or {})


def library_origins(related: Sequence[Related]) -> list[tuple[str, int]]:
    """Where a finding's op is made in library code: the frames saying "comes from here",
    else the innermost one."""
    origins = [(r.file, r.line) for r in related if "comes from" in r.message]
    return origins or [(r.file, r.line) for r in related[:1]]


def with_library(message: str, related: Sequence[Related]) -> str:
    """The message naming the library lines where the op is made (if not named already)."""
    names = [f"{os.path.basename(f)}:{n}" for f, n in library_origins(related)]
    missing = [n for n in names if n not in message]
    if not missing:
        return message
    shown = ", ".join(missing[:MAX_NAMED])
    if len(missing) > MAX_NAMED:
        shown += f" and {len(missing) - MAX_NAMED} more"
    return f"{message} (in {shown})"


def at_node(file: str, node: OnnxNode) -> str:
    """Where a finding of an ONNX model is: `model.onnx: node 12 "conv1" (Conv, opset 9)`."""
    return f"{file}: {node.label()}"


def knock_on_message(op: str, cause: str) -> str:
    """What an op that fails only because of another says at its own line."""
    return f"`{op}` fails only because of {cause}"

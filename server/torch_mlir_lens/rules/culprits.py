"""The one way every command and view words a failed lowering (no torch, no MLIR).

`lower`, `export`, `verify`, `check`, hovers and lenses all read the same unsupported-op
diagnostics (one per cause and line, worker/culprits/culprit_diags.py) and print them through
here, so they name the same ops at the same lines.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic
from torch_mlir_lens.rules.targets import target_title


def short_op(op: str | None) -> str:
    """`torch.aten.roll` → `aten.roll` (the name people know from PyTorch)."""
    if not op:
        return ""
    return op[len("torch."):] if op.startswith("torch.aten.") else op


def culprit_diagnostics(diags: Iterable[LensDiagnostic]) -> list[LensDiagnostic]:
    """The unsupported-op errors among `diags` (one per cause and line), in order."""
    return [d for d in diags if d.kind == ErrorKind.UNSUPPORTED_OP and d.severity == "error"]


def cause_of(diag: LensDiagnostic) -> str:
    """The cause as people read it: "`torch.roll` (decomposed to ...)" or "`aten.erfinv`"."""
    if diag.cause:
        return diag.cause
    return f"`{short_op(diag.op)}`" if diag.op else diag.message


def located(diag: LensDiagnostic, module_file: str | None = None) -> str:
    """"line 13" (or "other.py:13" for a line in another file; "the module" without one;
    "node 13" in an ONNX model)."""
    if diag.node is not None:
        return f"node {diag.node.index}"
    if diag.line is None:
        return "the module"
    if diag.file and module_file and os.path.normpath(diag.file) != os.path.normpath(
            module_file):
        return f"{os.path.basename(diag.file)}:{diag.line}"
    return f"line {diag.line}"


def summary(diags: Iterable[LensDiagnostic], target: str,
            module_file: str | None = None) -> str:
    """One line: "cannot lower to TOSA: `aten.erfinv` (line 13), `torch.roll` (...) (line 15)".

    Without culprits, the first error's message (or a plain "lowering to X failed").
    """
    diags = list(diags)
    culprits = culprit_diagnostics(diags)
    title = target_title(target)
    if culprits:
        # Lines of the module's file go bare; any other file is named (the first culprit's
        # file stands for the module's when it is not known).
        module_file = module_file or culprits[0].file
        parts = [f"{cause_of(d)} ({located(d, module_file)})" for d in culprits]
        return f"cannot lower to {title}: {', '.join(parts)}"
    errors = [d for d in diags if d.severity == "error"]
    if errors:
        first = errors[0].message.splitlines()[0].removeprefix(f"{title}: ")
        return f"cannot lower to {title}: {first}"
    return f"cannot lower to {title}"


def knock_on_text(diag: LensDiagnostic) -> str:
    """"`aten.size.int`, `torch.runtime.assert` fail only because of it" ("" when none)."""
    if not diag.knock_on:
        return ""
    names = list(dict.fromkeys(f"`{short_op(k.get('op'))}`" for k in diag.knock_on))
    return f"{', '.join(names)} {'fails' if len(names) == 1 else 'fail'} only because of it"


__all__ = ["cause_of", "culprit_diagnostics", "knock_on_text", "located", "short_op", "summary"]

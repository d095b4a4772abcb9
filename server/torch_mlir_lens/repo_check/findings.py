"""Module results → findings: one problem each, with a rule id, a place and a baseline key.

Rule ids: `<target>/<op>` for an op a backend cannot lower (`tosa/torch.aten.roll`),
`<target>/<kind>` for a backend's other failures (`linalg/lowering-error`), and `<kind>` for
what fails before any backend (`export-error`, `load-error`, `timeout`, `worker-crash`,
`memory-limit`, `inputs-missing` with `--require-inputs`, `syntax-error`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from torch_mlir_lens.protocol.results import ErrorKind, LowerResult
from torch_mlir_lens.repo_check.paths import rel_path

# Failures that happen before a backend is involved: reported once per module, not per target.
MODULE_KINDS = {
    ErrorKind.EXPORT_ERROR, ErrorKind.LOAD_ERROR, ErrorKind.SYNTAX_ERROR,
    ErrorKind.UNKNOWN_MODULE, ErrorKind.INPUTS_MISSING, ErrorKind.BAD_INPUTS,
    ErrorKind.BAD_REQUEST, ErrorKind.WORKER_CRASH, ErrorKind.TIMEOUT, ErrorKind.MEMORY_LIMIT,
    ErrorKind.CANCELLED,
}


@dataclass
class Finding:
    """One problem of one module (or file), located when a line is known."""

    rule: str
    kind: str
    message: str
    file: str  # '/'-separated, relative to the project root: where the problem is
    line: int | None
    module_file: str  # the module's file (baseline key)
    module: str | None  # None: a file-level problem (syntax error)
    module_line: int | None
    target: str | None = None
    op: str | None = None
    baselined: bool = False
    # In a notebook: the cell numbers of `line` and `module_line` (then lines within the cell)
    cell: int | None = None
    module_cell: int | None = None
    # A culprit's proven rewrite, or why none (repo_check/rewrite_findings.py); None: not asked
    rewrite: dict[str, Any] | None = None

    @property
    def baseline_key(self) -> tuple[str, str, str]:
        """(module file, module, rule): stable under edits that only move lines."""
        return (self.module_file, self.module or "", self.rule)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})  # type: ignore[arg-type]

    def sort_key(self) -> tuple[Any, ...]:
        return (self.module_file, self.module_cell or 0, self.module_line or 0,
                self.module or "", self.file, self.cell or 0, self.line or 0, self.rule)


def short_op(op: str) -> str:
    """`torch.aten.roll` → `aten.roll`: the name people know from PyTorch."""
    return op[len("torch."):] if op.startswith("torch.aten.") else op


def module_findings(results: list[LowerResult], *, rel: str, root: str,
                    module: str, module_line: int) -> list[Finding]:
    """The findings of one module's lowering results (one per target)."""
    found: dict[tuple[Any, ...], Finding] = {}

    def add(f: Finding) -> None:
        found.setdefault((f.rule, f.file, f.line, f.message if f.op is None else ""), f)

    for result in results:
        target = result.target
        errors = [d for d in result.diagnostics if d.severity == "error"]
        for d in errors:
            where = rel_path(d.file, root) if d.file else rel
            line = d.line
            if d.kind == ErrorKind.UNSUPPORTED_OP and d.op:
                op = short_op(d.op)
                add(Finding(f"{target}/{op}", d.kind, d.message, where, line, rel, module,
                            module_line, target, op))
            elif d.kind in MODULE_KINDS:
                add(Finding(str(d.kind), d.kind, d.message, where, line or module_line, rel,
                            module, module_line))
            else:
                add(Finding(f"{target}/{d.kind}", d.kind, d.message, where,
                            line or module_line, rel, module, module_line, target))
        if not result.ok and not errors:
            add(Finding(f"{target}/{ErrorKind.LOWERING_ERROR}", ErrorKind.LOWERING_ERROR,
                        f"does not lower to {target}", rel, module_line, rel, module,
                        module_line, target))
    return sorted(found.values(), key=Finding.sort_key)


def error_finding(kind: str, message: str, *, rel: str, line: int | None, module: str,
                  module_line: int, file: str | None = None) -> Finding:
    """A module that produced no result at all (load error, crash, time-out, memory)."""
    return Finding(str(kind), kind, message, file or rel, line or module_line, rel, module,
                   module_line)

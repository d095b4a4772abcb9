"""Where findings are made: from a module's lowering results, from a failed job, and from
what a file's text alone tells. The one place a finding's rule, words, severity and related
lines are decided; the editor and `check` call these and render what they return.

`place(path)` maps the worker's absolute paths to the caller's (the editor keeps them, `check`
makes them relative to its root).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from torch_mlir_lens.findings.finding import MODULE_KINDS, WORKER_KINDS, Finding, Related
from torch_mlir_lens.findings.wording import knock_on_message, op_message, with_library
from torch_mlir_lens.protocol.results import ErrorKind, LensDiagnostic, LensError, LowerResult
from torch_mlir_lens.protocol.verify_results import VerifyResult, dims_text
from torch_mlir_lens.rules import culprits
from torch_mlir_lens.rules.targets import target_title

Place = Callable[[str], str]


def _same(path: str) -> str:
    return path


def of_results(results: Iterable[LowerResult], *, module: str, module_file: str,
               module_line: int | None, place: Place = _same) -> list[Finding]:
    """The findings of one module's lowering results (one per target): every diagnostic,
    each rejected op once per cause and line, and a target that failed without saying why."""
    found: dict[tuple[object, ...], Finding] = {}
    for result in results:
        said = False
        for diag in result.diagnostics:
            finding = of_diagnostic(diag, result.target, module=module,
                                    module_file=module_file, module_line=module_line,
                                    place=place)
            said = said or finding.severity == "error"
            key = (finding.rule, finding.file, finding.line,
                   finding.message if finding.op is None else "")
            found.setdefault(key, finding)
        if not result.ok and not said:
            target = result.target
            finding = Finding(
                f"{target}/{ErrorKind.LOWERING_ERROR}", ErrorKind.LOWERING_ERROR,
                f"does not lower to {target}", module_file, module_line, module_file, module,
                module_line, target=target, on_module=True)
            found.setdefault((finding.rule, None, None, finding.message), finding)
    return sorted(found.values(), key=Finding.sort_key)


def of_diagnostic(diag: LensDiagnostic, target: str, *, module: str, module_file: str,
                  module_line: int | None, place: Place = _same) -> Finding:
    """One diagnostic of a lowering to `target` as a finding."""
    target = diag.target or target
    file = place(diag.file) if diag.file else module_file
    related = tuple(Related(place(r.file), r.line, r.message) for r in diag.related)
    severity = str(diag.severity)
    if diag.kind == ErrorKind.UNSUPPORTED_OP and diag.op:
        op = culprits.short_op(diag.op)
        cause = culprits.cause_of(diag) if diag.cause else None
        message = op_message(cause, f"`{op}`", [target], detail=diag.message,
                             reasons={target: diag.reason} if diag.reason else None)
        return Finding(
            f"{target}/{op}", diag.kind, with_library(message, related), file, diag.line,
            module_file, module, module_line, target=target, op=op, severity=severity,
            cause=diag.cause, why=diag.reason, related=related, knock_on=_knock_on(diag, place),
            node=diag.node, on_module=diag.line is None)
    on_module = diag.kind in WORKER_KINDS or diag.line is None
    line = diag.line if diag.line is not None else module_line
    module_wide = diag.kind in MODULE_KINDS or not target  # a whole job failed: no backend
    return Finding(
        str(diag.kind) if module_wide else f"{target}/{diag.kind}", diag.kind, diag.message,
        file, line, module_file, module, module_line, target=None if module_wide else target,
        severity=severity, why=diag.reason, related=related, node=diag.node,
        on_module=on_module)


def _knock_on(diag: LensDiagnostic, place: Place) -> tuple[Related, ...]:
    cause = culprits.cause_of(diag)
    return tuple(
        Related(place(k["file"]), int(k["line"]),
                knock_on_message(culprits.short_op(k.get("op")), cause))
        for k in diag.knock_on or [] if k.get("file") and k.get("line"))


def of_error(err: LensError, *, module: str, module_file: str, module_line: int | None,
             place: Place = _same, target: str | None = None) -> Finding:
    """A module whose job produced no result at all (load error, crash, time-out, ...); with
    `target`, a job of that target alone (an IREE compile that timed out while the other
    targets answered): the target's finding (`iree-cpu/timeout`), not the module's."""
    diag = err.to_diagnostic()
    if err.kind == ErrorKind.INPUTS_MISSING:
        diag.severity = "information"  # a module without inputs is a note, not a failure
    finding = of_diagnostic(diag, "", module=module, module_file=module_file,
                            module_line=module_line, place=place)
    if target is not None:
        finding.rule, finding.target = f"{target}/{finding.kind}", target
        finding.message = f"{target_title(target)}: {finding.message}"
    return finding


def missing_inputs(message: str, *, module: str, module_file: str, module_line: int | None,
                   severity: str = "information") -> Finding:
    """A module class without example inputs (a note in the editor; an error with
    `check --require-inputs`)."""
    return Finding(str(ErrorKind.INPUTS_MISSING), ErrorKind.INPUTS_MISSING, message,
                   module_file, module_line, module_file, module, module_line,
                   severity=severity, on_module=True)


def file_problem(kind: str, message: str, *, file: str, line: int | None,
                 cell: int | None = None, severity: str = "error") -> Finding:
    """A problem of a whole file (it cannot be read or parsed; a notebook cell left out)."""
    return Finding(kind, kind, message, file, line, file, None, None, severity=severity,
                   cell=cell)


def annotation_error(message: str, line: int, *, module: str, module_file: str,
                     module_line: int | None) -> Finding:
    """A part of a `# torch-mlir-lens:` comment that cannot be read (the worker refuses it
    with the same words: the two are one finding)."""
    return Finding(str(ErrorKind.BAD_INPUTS), ErrorKind.BAD_INPUTS, message, module_file, line,
                   module_file, module, module_line)


VERIFY_TARGET = "llvm"  # what Verify runs: the lowering compiled by torch-mlir's LLVM path


def of_verify(result: VerifyResult, *, module: str, module_file: str,
              module_line: int | None, place: Place = _same) -> list[Finding]:
    """A Verify that did not match: its verdict on the module (a line per size of a module
    with dynamic dims), and each located finding of it (the first diverging line, lowering
    errors). Nothing when it matched."""
    if result.ok:
        return []
    kind = result.kind or ErrorKind.VERIFY_ERROR
    mismatch = kind == ErrorKind.VERIFY_MISMATCH
    severity = "warning" if mismatch else "error"
    verdict = (result.message or "✗ verify failed").lstrip("✗ ").strip()
    message = f"{module}: compiled module {verdict}" if mismatch else \
        f"{module}: verify failed: {verdict}"
    out = [Finding(f"verify/{kind}", kind, message + size_lines(result), module_file,
                   module_line, module_file, module, module_line, target=VERIFY_TARGET,
                   severity=severity, on_module=True)]
    for diag in result.diagnostics:
        if not diag.file or not diag.line:
            continue  # already said by the verdict on the module
        out.append(Finding(
            f"verify/{diag.kind or kind}", diag.kind or kind, diag.message, place(diag.file),
            diag.line, module_file, module, module_line, target=diag.target or VERIFY_TARGET,
            op=culprits.short_op(diag.op) or None,
            severity=severity if mismatch else str(diag.severity)))
    return out


def size_lines(result: VerifyResult) -> str:
    """Each size of the dynamic dims that was run, one line each (empty without any)."""
    return "".join(
        f"\n{'✓' if c.ok else '✗'} {dims_text(c.dims)}"
        f"{' (example)' if c.example else ''}: {c.message.lstrip('✓✗ ')}"
        for c in result.sizes)

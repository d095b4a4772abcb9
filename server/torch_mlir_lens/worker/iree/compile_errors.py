"""iree-compile's errors, read from its output, placed at the user's lines.

    read_errors(stderr)                         → [CompileError]: message, frames, failing pass
    diagnostics(errors, users, target, title)   → [LensDiagnostic] at the user's lines

IREE prints MLIR diagnostics: `FILE:LINE:COL: error: MESSAGE`, then one `FILE:LINE:COL: note:
called from` per caller frame (the call stack the FX importer recorded, kept through IREE:
`compile_input.py`), `note: see current operation: ...`, and, with
`--mlir-print-ir-after-failure`, `// -----// IR Dump After PASS Failed: ARG //----- //`
followed by the IR (skipped here), which names the pass that failed. A failed link adds the
linker's own lines (`iree-lld: error: undefined symbol: tanh`), which say more than the error
that follows them. Later errors often only wrap the first ("failed to run translation of
source executable ..."): the first error speaks, and later ones only at another line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from torch_mlir_lens.protocol.results import (
    ErrorKind,
    LensDiagnostic,
    RelatedLocation,
    Severity,
)
from torch_mlir_lens.worker.ir.library_frames import library_files
from torch_mlir_lens.worker.ir.locations import UserFiles

_DIAG = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?::\d+)?: (?P<sev>error|warning|note|remark): "
                   r"(?P<msg>.*)$")
_BARE = re.compile(r"^(?:error|<unknown>:0: error): (?P<msg>.*)$")
_PASS = re.compile(r"^// -----// IR Dump After (?P<name>\S+) Failed: (?P<arg>[^ {]+)")
_TOOL_DETAIL = re.compile(r"^(?:iree-lld|ld\.lld|lld|ptxas|clang): error: (?P<msg>.*)$")
_WRAPPERS = re.compile(r"^failed to (run (translation|configuration)|translate|serialize|"
                       r"configure|link executables)|^failed to legalize operation '(hal|"
                       r"stream)\.")
# Words of IREE's refusal of an architecture (not of the module).
_ARCH_REFUSALS = ("missing GPU target in #hal.executable.target", "does not provide any "
                  "executable targets", "Unknown Vulkan target", "Unknown ROCM target",
                  "Unknown CUDA target")
_UNKNOWN = {"<unknown>", "-", ""}
_PRODUCT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_INNER_LOCATION = re.compile(r" loc\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
MESSAGE_CHARS = 400  # of IREE's words in a diagnostic (an op it prints can be long)


@dataclass
class CompileError:
    """One error of iree-compile: its words, its call stack (innermost first), the pass."""

    message: str
    frames: list[tuple[str, int]] = field(default_factory=list)
    pass_name: str | None = None
    details: list[str] = field(default_factory=list)  # the linker's own words, if any

    @property
    def text(self) -> str:
        """The message with the details that explain it, without the locations an op
        printed inside it carries, and not endless."""
        extra = f" ({'; '.join(dict.fromkeys(self.details))})" if self.details else ""
        words = _INNER_LOCATION.sub("", self.message)
        if self.details:  # they are what "above" pointed at
            words = words.replace(" (check above for more specific error messages)", "")
        if len(words) > MESSAGE_CHARS:
            words = words[:MESSAGE_CHARS].rstrip() + " …"
        return f"{words}{extra}"

    def refuses_architecture(self) -> bool:
        """Whether this error is IREE refusing the architecture itself."""
        return any(words in self.message for words in _ARCH_REFUSALS)


def read_errors(stderr: str) -> list[CompileError]:
    """The errors of iree-compile's output, in order, each with its frames and pass."""
    errors: list[CompileError] = []
    details: list[str] = []
    in_dump = False
    for line in stderr.splitlines():
        passed = _PASS.match(line)
        if passed:
            for error in errors:
                if error.pass_name is None:
                    error.pass_name = passed.group("arg")
            in_dump = True
            continue
        tool = _TOOL_DETAIL.match(line)
        if tool:
            details.append(f"{line.split(':', 1)[0]}: {tool.group('msg').strip()}")
            continue
        diag = _DIAG.match(line)
        if diag is not None:
            in_dump = False
            file = diag.group("file")
            frame = [] if file in _UNKNOWN else [(file, int(diag.group("line")))]
            severity, message = diag.group("sev"), diag.group("msg").strip()
            if severity == "error":
                errors.append(CompileError(message, frame, None, details))
                details = []
            elif severity == "note" and message == "called from" and errors:
                errors[-1].frames.extend(frame)
            continue
        bare = _BARE.match(line)
        if bare is not None and not in_dump:
            errors.append(CompileError(bare.group("msg").strip(), [], None, details))
            details = []
    if details and errors:
        errors[-1].details.extend(details)
    elif details:
        errors.append(CompileError("the compiler failed", [], None, details))
    return errors


def _user_line(error: CompileError, users: UserFiles) -> tuple[str, int] | None:
    return next(((f, n) for f, n in error.frames if f in users), None)


def _related(error: CompileError, users: UserFiles) -> list[RelatedLocation]:
    """The library lines of the error's call stack, innermost first (this product's own
    frames, a traced block's stubs, are no one's code)."""
    libraries = library_files()
    out = []
    for file, line in error.frames:
        if file in users:
            break
        if libraries.is_library(file) and not file.startswith(_PRODUCT):
            out.append(RelatedLocation(file, line, "the library line IREE's error is at"))
    return out


def _borrow_frames(errors: list[CompileError]) -> None:
    """An error at an unknown location (an op a pass made) takes the call stack of the next
    error that has one: the error wrapping it, at the dispatch region it happened in."""
    for i, error in enumerate(errors):
        if not error.frames:
            error.frames = next((e.frames for e in errors[i + 1:] if e.frames), [])


def diagnostics(errors: list[CompileError], users: UserFiles, *, target: str,
                title: str) -> list[LensDiagnostic]:
    """One diagnostic per error that says something new: the first error, then errors at
    other lines that are not wrappers of it; each at its innermost user frame."""
    out: list[LensDiagnostic] = []
    seen: set[tuple[str, int] | None] = set()
    _borrow_frames(errors)
    for i, error in enumerate(errors):
        where = _user_line(error, users)
        if i and (where in seen or _WRAPPERS.search(error.message)):
            continue
        seen.add(where)
        passed = f" (in IREE's pass `{error.pass_name}`)" if error.pass_name else ""
        place = "this line" if where else "the module"
        out.append(LensDiagnostic(
            severity=Severity.ERROR, kind=ErrorKind.COMPILE_ERROR, target=target,
            message=f"{title} cannot compile {place}: {error.text}{passed}",
            file=where[0] if where else None, line=where[1] if where else None,
            related=_related(error, users)))
    return out


__all__ = ["CompileError", "diagnostics", "read_errors"]

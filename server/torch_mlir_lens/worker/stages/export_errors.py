"""How a torch.export failure reads: what torch said that helps fix it, and where it happened.

`explained(err, exc, ...)` rewords the export error `torch_export.py` made (first line of
torch's message, the user's line) when there is more to say:

- **Constraints violated** (dynamic dims): torch's reasons and its `Suggested fixes:` block are
  kept, each fix also written in the `dynamic=` comment's syntax (source/dynamic_dims.py: the
  editor's quick fix applies it), and the error is located at the `dynamic=` comment.
- **A dynamic dim whose example size is 0 or 1**: torch.export takes those sizes for
  constants and says the code "specialized" the dim; the message says what happened instead
  (dynamic_dims.too_small_message) and how to fix it.
- **Raised inside library code** (a `transformers` model): located at the user's line that
  reaches it, with the library lines on the way in `related`, innermost first, and the
  innermost named in the message, as unsupported ops made in library code are.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Sequence
from typing import Any

from torch_mlir_lens.protocol.frames import short_path
from torch_mlir_lens.protocol.results import LensError, RelatedLocation
from torch_mlir_lens.source.dynamic_dims import (
    TooSmallExample,
    suggested_fixes,
    too_small_message,
)
from torch_mlir_lens.worker.ir.library_frames import library_files
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.stages import export_problems, export_reasons
from torch_mlir_lens.worker.stages.dynamic_spec import named_dims

_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_VIOLATED = re.compile(r"Constraints violated \(([^)]*)\)!?")
_NOISE = (re.compile(r"\s*For more information, run with TORCH_LOGS=\S+\.?"),)
_TRAILER = "The error above occurred when calling torch.export.export"
MAX_RELATED = 6


def explained(err: LensError, exc: BaseException, *, fn: Any, args: Sequence[Any],
              kwargs: dict[str, Any], dynamic_shapes: Any, users: UserFiles,
              dynamic_at: tuple[str, int] | None = None) -> LensError:
    """`err` (torch_export.py's wording of `exc`) reworded and relocated when there is more
    to say.

    `dynamic_at` is where the `dynamic=` spec was written (file, line): constraint errors go
    there."""
    text = str(exc)
    violated = _VIOLATED.search(text)
    if violated is not None:
        names = [n.strip() for n in violated.group(1).split(",") if n.strip()]
        message = _constraints_message(text, names, fn, args, kwargs, dynamic_shapes)
        file, line = dynamic_at or (err.file, err.line)
        return LensError(err.kind, message, file=file, line=line)
    related = _library_frames(exc, text, users)
    def is_code(file: str) -> bool:
        return file in users or library_files().is_library(file)

    why = export_reasons.reason_of(exc, fn, is_code)
    if why is not None:
        found = export_problems.draft_problems(fn, args, kwargs, is_code)
        out = _with_others(_with_reason(err, why, related, users), why, found, users)
        out.pin_candidate = why.tensor  # type: ignore[attr-defined]  # the worker proves it
        # A data-dependent refusal: the export specialised to the example may take it past
        # (rewrites/specialize.py), proven by the worker like the pin.
        out.specialize_candidate = True  # type: ignore[attr-defined]
        return out
    if not related:
        return err
    origin = f"{short_path(related[0].file)}:{related[0].line}"
    first, _, rest = err.message.partition("\n")
    message = f"{first} (in {origin})" + (f"\n{rest}" if rest else "")
    return LensError(err.kind, message, file=err.file, line=err.line, related=related)


def _where(file: str, line: int, users: UserFiles) -> str:
    return f"line {line}" if file in users else f"{short_path(file)}:{line}"


def _with_others(err: LensError, why: export_reasons.Reason,
                 found: list[export_problems.Problem], users: UserFiles) -> LensError:
    """The other lines draft_export found refused, after the first: one message line and
    one related location each."""
    others = [p for p in found if (p.file, p.line) != (why.file, why.line)]
    if not others:
        return err
    lines = [f"also refused: `{p.code}` ({_where(p.file, p.line, users)}) "
             f"{export_reasons.words_for(p.code)}" for p in others]
    head, _, advice = err.message.partition("\n")
    message = "\n".join([head, *lines] + ([advice] if advice else []))
    related = [*err.related, *[RelatedLocation(p.file, p.line, f"also refused: {p.code}")
                               for p in others]]
    return LensError(err.kind, message, file=err.file, line=err.line, related=related)


def _with_reason(err: LensError, why: export_reasons.Reason, related: list[RelatedLocation],
                 users: UserFiles) -> LensError:
    """The export error said in words at the line that made it, with that line's code; a
    library's line also in `related` (first, with its code) and named in the message, the
    error staying on the user's innermost line that reaches it. The advice fits: code the
    user owns can use torch.cond / torch.where / torch._check; a library's line cannot."""
    in_library = why.file not in users
    where = f"{short_path(why.file)}:{why.line}" if in_library else f"line {why.line}"
    first = err.message.split("\n", 1)[0]
    torch_said = first.removeprefix("torch.export failed: ")
    # The values said are the module's own (a buffer's): what a condition on the example
    # inputs came to would change with inputs drawn at random, and with it the message.
    message = f"torch.export failed: `{why.code}` ({where}) {why.words} ({torch_said})"
    if in_library:
        message += ("\nthe line is library code: torch.cond / torch.where / torch._check would "
                    "have to go there; building or calling the module so that it does not "
                    "reach that line (another argument, a value fixed before export) avoids it")
    else:
        message += ("\nuse torch.cond / torch.where for the branch, or mark the value with "
                    "torch._check")
    if in_library:
        first_related = RelatedLocation(why.file, why.line, f"raised here: {why.code}")
        related = [first_related, *[r for r in related
                                    if (r.file, r.line) != (why.file, why.line)]]
    file, line = (err.file, err.line) if err.line is not None or in_library else (why.file,
                                                                                  why.line)
    return LensError(err.kind, message, file=file, line=line, related=related)


# --- dynamic dims -----------------------------------------------------------------------------


def _too_small(names: Sequence[str], fn: Any, args: Sequence[Any], kwargs: dict[str, Any],
               spec: Any) -> list[TooSmallExample]:
    """The named dims whose example size torch.export takes for a constant (0 or 1)."""
    out: list[TooSmallExample] = []
    seen: set[str] = set()
    for dim in named_dims(fn, args, kwargs, spec):
        size = int(dim.tensor.shape[dim.axis])
        if dim.name in names and size in (0, 1) and dim.name not in seen:
            seen.add(dim.name)
            out.append(TooSmallExample(dim.name, dim.input, dim.axis, size,
                                       tuple(int(s) for s in dim.tensor.shape)))
    return out


def _constraints_message(text: str, names: Sequence[str], fn: Any, args: Sequence[Any],
                         kwargs: dict[str, Any], spec: Any) -> str:
    small = _too_small(names, fn, args, kwargs, spec)
    lines = [f"torch.export failed: {too_small_message(s)}" for s in small]
    others = [n for n in names if n not in {s.dim for s in small}]
    if others:
        lines += _torch_lines(text, others, first=not lines)
        fixes = [f for f in suggested_fixes(text) if f.name in others]
        if fixes:
            lines.append("In the dynamic= comment: " + "; ".join(f.describe() for f in fixes))
    return "\n".join(lines)


def _torch_lines(text: str, names: Sequence[str], *, first: bool) -> list[str]:
    """torch's header, reasons and suggested fixes for `names` (the dims not explained
    otherwise), without its pointers to logs and draft_export."""
    body = text.split(_TRAILER, 1)[0]
    header, *rest = body.strip().splitlines()
    for noise in _NOISE:
        header = noise.sub("", header)
    header = re.sub(r"Constraints violated \([^)]*\)", f"Constraints violated ({', '.join(names)})",
                    header)
    out = [f"torch.export failed: UserError: {header.strip()}" if first else header.strip()]
    keep = True
    for line in rest:
        stripped = line.strip()
        if not stripped:
            continue
        if line.startswith("  - "):  # one reason per dim
            keep = any(re.search(rf"\b{re.escape(n)}\b", line) for n in names)
        elif re.match(r"\s+\w+\s*=", line):  # one suggested fix per dim
            keep = line.split("=", 1)[0].strip() in names
        elif stripped == "Suggested fixes:":
            keep = True
        if keep:
            out.append(line.rstrip())
    return out


# --- library code ----------------------------------------------------------------------------


def _frames(exc: BaseException, text: str) -> list[tuple[str, int]]:
    """The frames of the failure, outermost first: torch's "Original traceback" in the
    message when there is one (failures while re-tracing a graph), else the traceback's."""
    written = [(f, int(n)) for f, n in _FILE_LINE.findall(text)]
    traced = _traceback_frames(exc)
    if written and not any(f == w for f, _ in traced for w, _ in written[:1]):
        return written  # re-tracing a graph: the traceback is torch's own
    # torch's text names only where it was raised ("The following call raised this error"):
    # the traceback, which has the user's line too, is the longer story.
    return traced + [w for w in written if w not in traced]


def _traceback_frames(exc: BaseException) -> list[tuple[str, int]]:
    """The traceback's (file, line) frames, outermost first, along the chain of causes."""
    frames: list[tuple[str, int]] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    chain = []
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    for e in reversed(chain):  # the first raised first
        frames += [(fs.filename, fs.lineno or 0) for fs in traceback.extract_tb(e.__traceback__)]
    return frames


def _library_frames(exc: BaseException, text: str, users: UserFiles) -> list[RelatedLocation]:
    """The library frames between the innermost user frame and where it was raised,
    innermost first; [] when it was not raised inside library code."""
    frames = _frames(exc, text)
    last_user = max((i for i, (f, _) in enumerate(frames) if f in users), default=None)
    if last_user is None:
        return []
    inside = [(f, n) for f, n in frames[last_user + 1:]
              if f not in users and library_files().is_library(f)]
    out: list[RelatedLocation] = []
    for i, (file, line) in enumerate(reversed(inside[-MAX_RELATED:])):
        message = "raised here" if i == 0 else "called from here"
        out.append(RelatedLocation(file, line, message))
    return out

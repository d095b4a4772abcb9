"""Parse the `# torch-mlir-lens: ...` comments that give a module its example inputs.

Pure text: no torch import, no evaluation (the worker evaluates the expressions).

Syntax (documented in the README):

    # torch-mlir-lens: inputs=(torch.randn(2, 16),)
    # torch-mlir-lens: init=(16, 4)
    # torch-mlir-lens: dynamic={"x": {0: "batch"}}
    # torch-mlir-lens: rewrites=erfinv@tosa, histc
    @some_decorator
    class MLP(nn.Module):
        ...

- The comment lines sit in the comment block *directly* above the class/def (no blank line in
  between); decorators may come between the comments and the `class`/`def` line. Other, ordinary
  comment lines may be mixed into that block.
- Keys: `inputs`, `init`, `dynamic`, `rewrites` (the rewrites a backend lowers the module
  with: `NAME@BACKEND` or `NAME` for every backend, comma-separated; not an expression).
  Several keys may share one line, separated by `;` at bracket depth 0 outside strings:
  `# torch-mlir-lens: inputs=(x,); init=(16, 4)`.
- A value whose brackets are not closed at the end of its line continues on the following comment
  lines (with or without their own `torch-mlir-lens:` prefix), so long expressions can be wrapped.
- A later occurrence of a key overrides an earlier one. Unknown keys and values that are not
  valid Python expressions are reported in `InputAnnotation.errors`, each at its line (the rest
  still applies; the worker refuses to lower a module whose comment has errors, and the editor
  marks them where they are written).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

KEYS = ("inputs", "init", "dynamic", "rewrites")

# "# torch-mlir-lens: rest" (spaces optional, case-insensitive prefix).
_PREFIX_RE = re.compile(r"^\s*#\s*torch-mlir-lens\s*:\s*(?P<rest>.*)$", re.IGNORECASE)
_KEY_RE = re.compile(r"^\s*(?P<key>[A-Za-z_][\w-]*)\s*=\s*(?P<value>.*)$", re.DOTALL)
_OPEN = "([{"
_CLOSE = ")]}"


@dataclass
class AnnotationError:
    """A part of a `# torch-mlir-lens:` comment that could not be read, at its 1-based line."""

    line: int
    message: str


@dataclass
class InputAnnotation:
    """What the `# torch-mlir-lens:` comments above one class or function say.

    `inputs`, `init`, `dynamic` are the raw Python expression strings (None when absent);
    `rewrites` the raw `NAME@BACKEND, ...` list.
    `line` is the 1-based line of the first `torch-mlir-lens` comment; `key_lines` the line of
    each key (for diagnostics on a bad expression); `errors` messages for unparsable parts.
    """

    inputs: str | None = None
    init: str | None = None
    dynamic: str | None = None
    rewrites: str | None = None
    line: int = 0
    key_lines: dict[str, int] = field(default_factory=dict)
    errors: list[AnnotationError] = field(default_factory=list)


def _outside_strings(text: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, bracket depth after it) of each character outside string literals."""
    depth = 0
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif text.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif ch in "'\"":
            quote = text[i : i + 3] if text[i : i + 3] in ("'''", '"""') else ch
            i += len(quote) - 1
        else:
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth -= 1
            yield i, ch, depth
        i += 1


def _bracket_depth(text: str) -> int:
    """Bracket depth at the end of `text`, ignoring brackets inside string literals."""
    depth = 0
    for _, ch, depth_after in _outside_strings(text):
        if ch == "#":
            break  # a trailing comment inside the comment: ignore the rest
        depth = depth_after
    return depth


def split_top_level(text: str, sep: str = ";") -> list[str]:
    """Split `text` at `sep` characters outside brackets and string literals."""
    parts: list[str] = []
    start = 0
    for i, ch, depth in _outside_strings(text):
        if ch == sep and depth <= 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (s.strip() for s in parts) if p]


def _comment_block_above(lines: list[str], def_line: int) -> list[int]:
    """0-based indexes of the comment lines directly above `def_line` (1-based), top first.

    Decorator lines (starting with `@`) between the comments and the definition are skipped.
    """
    idx = def_line - 2
    while idx >= 0 and lines[idx].lstrip().startswith("@"):
        idx -= 1
    block: list[int] = []
    while idx >= 0 and lines[idx].lstrip().startswith("#"):
        block.append(idx)
        idx -= 1
    block.reverse()
    return block


def _comment_body(line: str) -> str:
    """The text of a comment line after its `#`."""
    return line.lstrip()[1:].strip()


# Another key written after a value without the `;` between them: `inputs=(x,) dynamic={...}`.
_NEXT_KEY_RE = re.compile(r"[)\]}\s]\s*(" + "|".join(KEYS) + r")\s*=[^=]")


# `rewrites=`: NAME or NAME@BACKEND items (names may be dotted: `decomp.slice.Tensor`).
_REWRITE_ITEM = r"[A-Za-z_][\w.]*(?:\s*@\s*[A-Za-z_]\w*)?"
REWRITES_RE = re.compile(rf"^\s*{_REWRITE_ITEM}(?:\s*,\s*{_REWRITE_ITEM})*\s*,?\s*$")


def _check_expr(key: str, value: str) -> str | None:
    """An error message if `value` is not a Python expression, else None."""
    if key == "rewrites":
        if REWRITES_RE.match(value):
            return None
        return ("`rewrites=` of the `# torch-mlir-lens:` comment lists rewrites as NAME@BACKEND "
                f"(or NAME for every backend), separated by commas: {value}")
    try:
        ast.parse(value.strip(), mode="eval")
    except SyntaxError as exc:
        hint = ""
        following = _NEXT_KEY_RE.search(value)
        if following is not None:
            hint = f"; separate `{key}=` and `{following.group(1)}=` with `;`"
        return (f"`{key}=` of the `# torch-mlir-lens:` comment is not a valid Python "
                f"expression ({exc.msg}{hint}): {value}")
    return None


def _apply(ann: InputAnnotation, segment: str, line: int) -> None:
    """Record one `key=value` segment into `ann`."""
    match = _KEY_RE.match(segment)
    if not match:
        ann.errors.append(AnnotationError(line, f"expected key=value in the `# torch-mlir-lens:` "
                                                f"comment, got: {segment}"))
        return
    key, value = match.group("key").lower(), match.group("value").strip()
    if key not in KEYS:
        ann.errors.append(AnnotationError(
            line, f"unknown key '{key}' in the `# torch-mlir-lens:` comment "
                  f"(known: {', '.join(KEYS)})"))
        return
    error = _check_expr(key, value)
    if error:
        ann.errors.append(AnnotationError(line, error))
        return
    setattr(ann, key, value)
    ann.key_lines[key] = line


def parse_annotation_block(lines: list[str], def_line: int) -> InputAnnotation | None:
    """Parse the `# torch-mlir-lens:` comments directly above the definition at `def_line`.

    `lines` are the file's lines (e.g. `text.splitlines()`); `def_line` is the 1-based line of the
    `class`/`def` keyword or of its first decorator. Returns None when there is no such comment.
    """
    block = _comment_block_above(lines, def_line)
    ann: InputAnnotation | None = None
    pending = ""  # a value whose brackets are still open
    pending_line = 0
    for idx in block:
        match = _PREFIX_RE.match(lines[idx])
        if pending:
            body = match.group("rest") if match else _comment_body(lines[idx])
            pending += " " + body
            if _bracket_depth(pending) > 0:
                continue
            text, line, pending = pending, pending_line, ""
        elif match:
            text, line = match.group("rest"), idx + 1
            if _bracket_depth(text) > 0:
                pending, pending_line = text, line
                if ann is None:
                    ann = InputAnnotation(line=line)
                continue
        else:
            continue
        if ann is None:
            ann = InputAnnotation(line=line)
        for segment in split_top_level(text):
            _apply(ann, segment, line)
    if pending and ann is not None:
        ann.errors.append(AnnotationError(
            pending_line, f"unclosed bracket in the `# torch-mlir-lens:` comment: "
                          f"{pending.strip()}"))
    return ann


def format_annotation(
    inputs: str | None = None, init: str | None = None, dynamic: str | None = None,
    indent: str = "", rewrites: str | None = None,
) -> str:
    """The comment line(s) stating the given keys, one key per line (no trailing newline)."""
    parts = [(k, v) for k, v in (("inputs", inputs), ("init", init), ("dynamic", dynamic),
                                 ("rewrites", rewrites)) if v]
    return "\n".join(f"{indent}# torch-mlir-lens: {k}={v}" for k, v in parts)

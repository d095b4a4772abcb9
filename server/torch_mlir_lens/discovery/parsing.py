"""Parse a Python file so that syntax errors lose only the statements they touch.

The file is parsed per top-level statement through a cache keyed by (line, text), so an edit
re-parses only the statement it touches; a chunk that does not parse alone falls back to the
whole file, and a file that does not parse is repaired (bad lines neutralised) chunk by chunk.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator

from torch_mlir_lens.system.bounded_cache import BoundedCache


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _blank_bad_lines(lines: list[str], err: SyntaxError) -> bool:
    """Neutralise the lines a syntax error points at (in place); False if nothing changed.

    The bad statement becomes `pass` at its own indentation (so an enclosing block keeps a
    body); a header without a body gets ` pass` appended; an unexpected indent is blanked with
    every line indented under it.
    """
    lineno = (err.lineno or 0) - 1
    if not 0 <= lineno < len(lines):
        return False
    msg = err.msg or ""
    if "expected an indented block" in msg:
        prev = lineno - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        if prev >= 0 and lines[prev].rstrip().endswith(":"):
            lines[prev] = lines[prev].rstrip() + " pass"
            return True
        lineno = max(prev, 0)
    line = lines[lineno]
    if not line.strip():
        return False
    level = _indent(line)
    replacement = "" if "unexpected indent" in msg else line[:level] + "pass"
    if line == replacement:
        return False
    lines[lineno] = replacement
    if replacement == "":
        # Lines indented under the removed one would now be an unexpected indent too.
        nxt = lineno + 1
        while nxt < len(lines) and (not lines[nxt].strip() or _indent(lines[nxt]) > level):
            lines[nxt] = ""
            nxt += 1
    return True


def _repair_parse(lines: list[str], tries: int) -> ast.Module | None:
    """Parse, blanking the lines of each syntax error, at most `tries` times."""
    work = list(lines)
    for _ in range(tries):
        try:
            return ast.parse("\n".join(work))
        except SyntaxError as err:
            if not _blank_bad_lines(work, err):
                return None
        except (ValueError, RecursionError):
            return None
    return None


_CONTINUATION_KEYWORDS = ("else", "elif", "except", "finally", "case")


def _top_level_chunks(
    lines: list[str], blocked: set[int] | None = None,
) -> Iterator[tuple[int, int]]:
    """(start, end) 0-based line ranges of top-level statements, decorators kept with their def.

    `blocked` holds the indexes of lines that begin inside a string, brackets or a backslash
    continuation (never a statement start); without it, a rough guess from the text is used.
    """
    start = 0
    has_statement = False
    for i, line in enumerate(lines):
        if not line or line[0] in " \t#)]}'\"" or not line.strip():
            continue
        if blocked is not None and i in blocked:
            continue
        word = re.match(r"\w+", line)
        if word and word.group(0) in _CONTINUATION_KEYWORDS:
            continue
        is_decorator = line.startswith("@")
        if has_statement:
            yield start, i
            start, has_statement = i, not is_decorator
        elif not is_decorator:
            has_statement = True
    yield start, len(lines)


# Strings and comments; only triple-quoted strings (group "t") can span lines.
_LEX_RE = re.compile(
    r"""(?P<t>'''(?:[^'\\]|\\.|'(?!''))*(?:'''|$)|\"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\"|$))"""
    r"""|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|\#[^\n]*""",
    re.DOTALL,
)


def _blocked_lines(text: str) -> set[int]:
    """0-based indexes of the lines that start inside a triple-quoted string.

    Lines inside brackets or after a backslash are not tracked: splitting there leaves an
    unfinished first part that fails to parse, and the caller then parses the whole file.
    """
    blocked: set[int] = set()
    pos = line = 0
    for m in _LEX_RE.finditer(text):
        if m.lastgroup == "t":
            newlines = m.group().count("\n")
            if newlines:
                line += text.count("\n", pos, m.start())
                pos = m.start()
                blocked.update(range(line + 1, line + newlines + 1))
    return blocked


# Parsed top-level chunks keyed by (first line, chunk text): an edit re-parses only its chunk.
_CHUNK_CACHE_SIZE = 4096
_CHUNK_CACHE: BoundedCache[tuple[int, str], list[ast.stmt]] = BoundedCache(_CHUNK_CACHE_SIZE)


def _parse_chunked(text: str) -> list[ast.stmt] | None:
    """Parse the file chunk by chunk through the chunk cache; None if any chunk fails."""
    if "\r" in text or "\x0c" in text:
        return None  # line-break conventions the simple splitter does not model
    lines = text.split("\n")
    blocked = _blocked_lines(text)
    body: list[ast.stmt] = []
    for start, end in _top_level_chunks(lines, blocked):
        chunk = "\n".join(lines[start:end])
        key = (start, chunk)
        stmts = _CHUNK_CACHE.get(key)
        if stmts is None:
            try:
                tree = ast.parse(chunk)
            except (SyntaxError, ValueError, RecursionError):
                return None
            # Shift to the chunk's real lines (padding with newlines instead made parsing a
            # big file quadratic).
            stmts = ast.increment_lineno(tree, start).body
            _CHUNK_CACHE.put(key, stmts)
        body.extend(stmts)
    return body


def parse_tolerant(text: str) -> list[ast.stmt]:
    """The file's top-level statements; parts with syntax errors are left out, never raised.

    Parsed chunk by chunk through a cache (an edit in one class re-parses only that class); when
    a chunk does not parse on its own the whole file is parsed, and when that fails too, each
    top-level chunk is repaired (bad lines neutralised) or dropped.
    """
    text = text.removeprefix("\ufeff")  # a byte-order mark is not source
    with warnings.catch_warnings():
        # Half-typed code makes the compiler warn (invalid escapes, ...): not ours to report.
        warnings.simplefilter("ignore")
        return _parse_tolerant(text)


def parses_cleanly(text: str) -> bool:
    """Whether the whole file parses as it is (through the chunk cache when it can)."""
    text = text.removeprefix("\ufeff")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _parse_chunked(text) is not None or _parse(text) is not None


def _parse_tolerant(text: str) -> list[ast.stmt]:
    chunked = _parse_chunked(text)
    if chunked is not None:
        return chunked
    tree = _parse(text)
    if tree is not None:
        return tree.body
    lines = text.splitlines()
    body: list[ast.stmt] = []
    for start, end in _top_level_chunks(lines):
        chunk = _repair_parse(lines[start:end], tries=8)
        if chunk is None:
            continue
        ast.increment_lineno(chunk, start)
        body.extend(chunk.body)
    return body

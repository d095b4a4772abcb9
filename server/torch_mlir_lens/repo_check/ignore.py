"""Gitignore-style patterns: `.gitignore` files and the `exclude` list.

Git's rules, as far as they matter for choosing source files: `#` comments, `!` negation (the
last matching pattern wins), a trailing `/` matches folders only, a pattern with a `/` before
its end is anchored to its base folder, otherwise it matches a name at any depth; `*` and `?`
do not cross `/`, `**` does. No git binary is needed, so it works in any checkout or archive.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from torch_mlir_lens.system.reading import read_text


@dataclass(frozen=True)
class Pattern:
    """One compiled pattern, relative to `base` (an absolute folder)."""

    base: str
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    source: str


def glob_regex(glob: str) -> str:
    """A glob (`*`, `?`, `[...]`, `**`) as a regular expression over '/'-separated paths."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = glob[i + 1:end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def compile_pattern(line: str, base: str) -> Pattern | None:
    """A pattern from one `.gitignore` / exclude line; None for blanks and comments."""
    text = line.rstrip("\n").rstrip("\r")
    if not text.strip() or text.startswith("#"):
        return None
    text = text.rstrip(" ")
    negated = text.startswith("!")
    if negated or text.startswith("\\!") or text.startswith("\\#"):
        text = text[1:]
    dir_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text
    text = text.lstrip("/")
    if text.startswith("./"):
        text = text[2:]
    body = glob_regex(text)
    regex = f"^{body}$" if anchored else f"^(?:.*/)?{body}$"
    return Pattern(os.path.abspath(base), re.compile(regex), negated, dir_only, line.strip())


def read_ignore_file(path: str) -> list[Pattern]:
    """The patterns of a `.gitignore` (none if it cannot be read)."""
    try:
        lines = read_text(path, errors="replace").splitlines()  # bounded, regular files only
    except OSError:
        return []
    base = os.path.dirname(os.path.abspath(path))
    return [p for p in (compile_pattern(ln, base) for ln in lines) if p is not None]


def matches(patterns: list[Pattern], path: str, is_dir: bool) -> Pattern | None:
    """The pattern that ignores `path` (absolute), or None (last match wins; `!` re-includes)."""
    verdict: Pattern | None = None
    for pattern in patterns:
        if pattern.dir_only and not is_dir:
            continue
        rel = os.path.relpath(path, pattern.base)
        if rel == "." or rel.startswith(".."):
            continue
        if pattern.regex.match(rel.replace(os.sep, "/")):
            verdict = None if pattern.negated else pattern
    return verdict

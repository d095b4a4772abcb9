"""The hover's breakdown of a user line that calls into library code, by library line.

For `out = self.lm(input_ids=ids)` every op of the model maps to that one user line; the
breakdown says which lines of the library produced them: file, line, the code of that line
(read from the library's source file by this process: a file read, no import) and the number
of ops, heaviest first. An op counts at the innermost line of the file the user's line called
into (`frames.entry_frame`: `modeling_gpt2.py`'s attention line, not the `Conv1D` helper it
calls in another file).
"""

from __future__ import annotations

import os

from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.lsp.wire.source_text import line_text
from torch_mlir_lens.protocol.frames import LibraryLine, library_breakdown
from torch_mlir_lens.protocol.results import LowerResult

MAX_ROWS = 12
MAX_CODE_CHARS = 90


def op_lines(result: LowerResult) -> list[int]:
    """IR lines of `result.frames` that start an op (a region's closing `}` line is not one)."""
    ir = result.ir.splitlines()
    return [n for n in result.frames.ir_lines()
            if 0 < n <= len(ir) and not ir[n - 1].lstrip().startswith("}")]


def breakdown(result: LowerResult, path: str, line: int) -> list[LibraryLine]:
    """The library lines `path:line` reached, heaviest first (counts: ops)."""
    if not result.frames:
        return []
    return library_breakdown(result.frames, path, line, op_lines(result))


def _code(text: str) -> str:
    if len(text) > MAX_CODE_CHARS:
        text = text[: MAX_CODE_CHARS - 1] + "…"
    text = text.replace("|", "\\|")
    return f"`{text}`" if "`" not in text else text


def section(result: LowerResult, path: str, line: int) -> str:
    """Markdown: a table of the library lines reached (empty when the line reaches none)."""
    rows = breakdown(result, path, line)
    if not rows:
        return ""
    total = sum(len(r.ir_lines) for r in rows)
    out = [
        f"**Library lines reached** · {total} ops, heaviest first",
        "",
        "| ops | line | code |",
        "|---:|---|---|",
    ]
    for r in rows[:MAX_ROWS]:
        f = r.frame
        name = os.path.basename(f.file)
        link = f"[{name}:{f.line}]({convert.path_to_uri(f.file)}#L{f.line})"
        out.append(f"| {len(r.ir_lines)} | {link} | {_code(line_text(f.file, f.line))} |")
    rest = rows[MAX_ROWS:]
    if rest:
        ops = sum(len(r.ir_lines) for r in rest)
        out.append("")
        out.append(f"… {len(rest)} more library line{'s' if len(rest) != 1 else ''} "
                   f"({ops} ops)")
    return "\n".join(out)

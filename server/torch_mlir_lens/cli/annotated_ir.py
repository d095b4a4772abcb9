"""Source-annotated IR, as Compiler Explorer shows it: each source line, then its IR.

The IR keeps its order. Whenever the source line behind the IR changes, that source line is
printed as a header (`   23 │ x = F.relu(self.fc1(x))`), then the IR lines it produced, indented
under it. IR lines without a user frame (function headers, region bodies, `return`) stay where
they are, under the last header (region bodies belong to the op above them). The innermost user
frame (depth 0) decides the line, so ops inside a submodule show under the submodule's line.

With `frames="all"`, ops made inside library code (a wrapped `transformers` model) show under
the library line that made them (`modeling_gpt2.py:211 │ attn_output, ... = ...`), followed
by the way back to the user's line (`← modeling_gpt2.py:274 ← line 13`).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from torch_mlir_lens.protocol.frames import SourceFrame
from torch_mlir_lens.protocol.results import IrLineMapping, LowerResult
from torch_mlir_lens.system.reading import read_text

GUTTER = 7  # minimum width of the line-number column; IR lines start under the source text
FRAMES = ("user", "all")  # which frames decide an IR line's source line
MAX_HOPS = 4  # library calls shown on the way back to the user's line


def _read(path: str) -> list[str] | None:
    try:
        return read_text(path).splitlines()  # bounded, regular files only
    except (OSError, UnicodeDecodeError):
        return None


def line_sources(
    mapping: list[IrLineMapping], main_path: str | None,
) -> dict[int, tuple[str, int]]:
    """ir_line → (file, line) of its innermost user frame, preferring the main file."""
    best: dict[int, tuple[str, int]] = {}
    main = os.path.abspath(main_path) if main_path else None
    for m in mapping:
        if m.depth != 0:
            continue
        current = best.get(m.ir_line)
        in_main = main is not None and os.path.abspath(m.file) == main
        if current is None or (in_main and os.path.abspath(current[0]) != main):
            best[m.ir_line] = (m.file, m.line)
    return best


def annotate(
    source: str,
    result: LowerResult,
    *,
    path: str | None = None,
    read_file: Callable[[str], list[str] | None] = _read,
    frames: str = "user",
    line_label: Callable[[int], str] = str,
) -> str:
    """The IR of `result` interleaved with the lines of `source` (the file at `path`).

    Frames in other files (a submodule defined in a sibling file) are shown as `name.py:N`
    with that file's text, read with `read_file`. `frames="all"` shows library lines too.
    `line_label` writes a line of `source` (a notebook's program: `CELL:LINE`).
    """
    main = os.path.abspath(path) if path else None
    files: dict[str, list[str] | None] = {}
    if main:
        files[main] = source.splitlines()
    main_lines = source.splitlines()
    sources = line_sources(result.map, path)
    trails: dict[int, list[SourceFrame]] = {}
    if frames == "all":
        for n in result.frames.ir_lines():
            chain = result.frames.chains_of(n)[0]
            if chain and chain[0].library:
                sources[n] = (chain[0].file, chain[0].line)
                trails[n] = chain[1:]

    def source_text(file: str, line: int) -> str:
        lines: list[str] | None = main_lines
        if main is not None:
            key = os.path.abspath(file)
            if key not in files:
                files[key] = read_file(key)
            lines = files[key]
        if lines is None or not 1 <= line <= len(lines):
            return ""
        return lines[line - 1].rstrip()

    callers = _main_callers(result.map, main)

    def label(file: str, line: int) -> str:
        is_main = main is None or os.path.abspath(file) == main
        return line_label(line) if is_main else f"{os.path.basename(file)}:{line}"

    width = max([GUTTER, *(len(label(f, n)) for f, n in sources.values())])
    indent_ir = " " * (width + 3)
    state = "" if result.ok else " (partial)" if result.partial else " (incomplete)"
    out = [f"// {result.module} → {result.target}{state}"]
    last: tuple[str, int] | None = None
    group_indent = 0
    for number, ir_line in enumerate(result.ir.splitlines(), start=1):
        src = sources.get(number)
        indent = len(ir_line) - len(ir_line.lstrip())
        if src is None and last is not None and _ends_group(ir_line, indent, group_indent):
            last = None  # the function's `return` and closing braces belong to no line
        if src is not None and src != last:
            file, line = src
            header = f"{label(file, line):>{width}} │ {source_text(file, line)}"
            caller = callers.get(number)
            if number in trails:
                header += "    " + _trail(trails[number], label)
            elif caller is not None:
                header += f"    (called from line {line_label(caller)})"
            out.append(header)
            last = src
            group_indent = indent
        out.append(f"{indent_ir}{ir_line}" if last is not None else ir_line)
    return "\n".join(out) + "\n"


def _main_callers(mapping: list[IrLineMapping], main: str | None) -> dict[int, int]:
    """ir_line → the innermost line in the main file that led to an op defined elsewhere."""
    if main is None:
        return {}
    inner: dict[int, IrLineMapping] = {}
    outer: dict[int, IrLineMapping] = {}
    for m in mapping:
        if m.depth == 0 and os.path.abspath(m.file) != main:
            inner[m.ir_line] = m
        elif m.depth > 0 and os.path.abspath(m.file) == main:
            best = outer.get(m.ir_line)
            if best is None or m.depth < best.depth:
                outer[m.ir_line] = m
    return {n: outer[n].line for n in inner if n in outer}


def _ends_group(ir_line: str, indent: int, group_indent: int) -> bool:
    """An unmapped line that leaves the block of ops (deeper lines are region bodies)."""
    if indent < group_indent:
        return True
    stripped = ir_line.strip()
    return indent == group_indent and stripped.startswith(("return", "func.return"))


def _trail(callers: list[SourceFrame], label: Callable[[str, int], str]) -> str:
    """`← modeling_gpt2.py:274 ← modeling_gpt2.py:606 ← line 13`: the way out to the user."""
    hops: list[str] = []
    skipped = 0
    for frame in callers:
        if not frame.library:
            name = label(frame.file, frame.line)
            hops.append(f"line {name}" if name.isdigit() else name)
            break
        if len(hops) < MAX_HOPS:
            hops.append(label(frame.file, frame.line))
        else:
            skipped += 1
    if skipped:
        hops.insert(MAX_HOPS, f"… {skipped} more")
    return " ".join(f"← {h}" for h in hops)

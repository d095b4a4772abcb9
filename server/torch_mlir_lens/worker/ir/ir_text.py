"""IR text for people, and the map from printed IR lines to the user's source lines.

We print once with `enable_debug_info=True` and then read the locations back out of the text:
every op prints its location at the end of its last line (`... loc(#loc8)`; for an op with
regions that is the closing `} ... loc(...)` line), block arguments carry inline locations, and
`#locN = loc(...)` lines hold the alias table. Parsing the text (instead of walking ops and
guessing printed order) keeps printed lines and locations exactly in step, and never touches
Operation handles after a pass run (a SIGSEGV hazard).

Decisions:
- An op with regions maps its header line (`%4 = linalg.generic ... {`) and its closing line.
- An op with no user frame of its own inside another op's region (payload ops of
  `linalg.generic`, `linalg.yield`, ...) inherits the enclosing op's frames; counted in
  `stats["inherited_ops"]` and as mapped. `func.func` and `builtin.module` are structure: never
  mapped, not counted as ops, and never lend their location to the ops inside them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.frames import FrameTable, SourceFrame
from torch_mlir_lens.protocol.results import IrLineMapping
from torch_mlir_lens.worker.ir.locations import Chain, LocationResolver, UserFiles, as_user_files

# Weights (dense_resource blobs) larger than this many bytes are elided when printing for people.
ELIDE_RESOURCES_OVER = 64
# Inline dense constants with more elements than this are elided too.
ELIDE_ELEMENTS_OVER = 16

_ALIAS_LINE = re.compile(r"^(#loc[\w$.-]*) = (loc\(.*\))\s*$")
_LOC_START = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.$#])loc\(')
_PAREN_OR_STR = re.compile(r'"(?:[^"\\]|\\.)*"|[()]')
_TRAILING_ALIAS = re.compile(r"(?<![\w.$#])loc\(#loc[\w$.-]*\)\s*$")
_OP_NAME = re.compile(
    r'^\s*(?:(?:%[\w.$-]+(?::\d+)?\s*,\s*)*%[\w.$-]+(?::\d+)?\s*=\s*)?"?([A-Za-z_][\w$.]*)"?'
)
_STRUCTURAL = {"builtin.module", "func.func"}


@dataclass
class RenderedIr:
    """Printed IR, its source map and op statistics."""

    text: str
    map: list[IrLineMapping] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    frames: FrameTable = field(default_factory=FrameTable)  # chains through library code


@dataclass
class _Op:
    name: str
    first: int  # index of its first printed line (header)
    last: int  # index of the line that carries its location
    loc: str
    parent: int | None  # index into the op list of the enclosing region op
    chains: list[Chain] = field(default_factory=list)
    full: list[tuple[SourceFrame, ...]] = field(default_factory=list)  # with library frames
    inherited: bool = False


def print_asm(op: Any, *, keep_weights: bool = False) -> str:
    """Print an operation with locations (always, for the map); weights elided unless kept."""
    if keep_weights:
        return str(op.get_asm(enable_debug_info=True))
    # Resources (the weights as imported) and inline dense constants (TOSA folds weights into
    # `dense<"0x...">`) are both elided.
    return str(op.get_asm(enable_debug_info=True, large_resource_limit=ELIDE_RESOURCES_OVER,
                          large_elements_limit=ELIDE_ELEMENTS_OVER))


def _loc_spans(line: str) -> list[tuple[int, int]]:
    """[(start, end)] of every `loc(...)` in the line, outside string literals."""
    if "loc(" not in line:
        return []
    if '"' not in line and line.count("loc(") == 1:
        # Most lines: one op ending in an alias, ` loc(#loc12)`; no string can hide a paren.
        m = _TRAILING_ALIAS.search(line)
        if m is not None:
            return [(m.start(), m.start() + len(m.group(0).rstrip()))]
    return _scan_loc_spans(line)


def _scan_loc_spans(line: str) -> list[tuple[int, int]]:
    """`_loc_spans` for any line: skip string literals, match parentheses."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        m = _LOC_START.search(line, pos)
        if m is None:
            return spans
        if m.group(0).startswith('"'):
            pos = m.end()
            continue
        depth = 0
        end = len(line)
        for t in _PAREN_OR_STR.finditer(line, m.end() - 1):
            tok = t.group(0)
            if tok == "(":
                depth += 1
            elif tok == ")":
                depth -= 1
                if depth == 0:
                    end = t.end()
                    break
        spans.append((m.start(), end))
        pos = end


def _strip_spans(line: str, spans: list[tuple[int, int]]) -> str:
    out = []
    pos = 0
    for start, end in spans:
        out.append(line[pos:start].rstrip(" "))
        pos = end
    out.append(line[pos:])
    return "".join(out).rstrip()


def _op_name(header: str) -> str:
    m = _OP_NAME.match(header)
    name = m.group(1) if m else "?"
    if "." not in name:
        name = "builtin.module" if name == "module" else f"func.{name}"
    return name


def _is_empty_resource_section(lines: list[str]) -> bool:
    return not any("0x" in line for line in lines)


def render(asm: str, user_files: Iterable[str] | UserFiles, *,
           strip_locations: bool = True,
           mark: Callable[[tuple[Chain, ...]], str | None] | None = None) -> RenderedIr:
    """Turn `print_asm` output into text for people plus its ir_line → source map.

    With `strip_locations` the location clutter (`loc(...)`, the `#loc` alias table, an empty
    resource section) is removed; otherwise the text is kept as printed and mapped as is.
    `mark(frames)`, given every frame of an op's location, may return a note that ends the
    op's first line as a comment (`// rewrite erfinv`).
    """
    users = as_user_files(user_files)
    src = asm.split("\n")
    aliases: dict[str, str] = {}
    for line in src:
        m = _ALIAS_LINE.match(line)
        if m:
            aliases[m.group(1)] = m.group(2)
    resolver = LocationResolver(users, aliases)

    out: list[str] = []
    ops: list[_Op] = []
    stack: list[tuple[int, str]] = []  # (output line index of an open region op's header, name)
    pending_parents: list[list[int]] = []  # ops waiting for their enclosing op's index
    in_resources = False
    resource_block: list[str] = []

    for line in src:
        if in_resources or line.startswith("{-#"):
            in_resources = True
            resource_block.append(line)
            continue
        if _ALIAS_LINE.match(line):
            if not strip_locations:
                out.append(line)
            continue
        spans = _loc_spans(line)
        text = _strip_spans(line, spans) if strip_locations else line.rstrip()
        idx = len(out)
        out.append(text)
        body = line.strip()
        trailing = bool(spans) and spans[-1][1] == len(line.rstrip())
        if body.startswith("}") and stack:
            header_idx, header_name = stack.pop()
            waiting = pending_parents.pop()
            if trailing:
                loc = line[spans[-1][0]:spans[-1][1]]
                op_index = len(ops)
                ops.append(_Op(header_name, header_idx, idx, loc, None))
                for child in waiting:
                    ops[child].parent = op_index
                if pending_parents:
                    pending_parents[-1].append(op_index)
            elif body.endswith("{"):  # `} else {`, `}, {`: the same op opens its next region
                stack.append((header_idx, header_name))
                pending_parents.append(waiting)
            continue
        if trailing:
            loc = line[spans[-1][0]:spans[-1][1]]
            op_index = len(ops)
            ops.append(_Op(_op_name(text), idx, idx, loc, None))
            if pending_parents:
                pending_parents[-1].append(op_index)
        elif body.endswith("{"):
            stack.append((idx, _op_name(text)))
            pending_parents.append([])

    if resource_block and not (strip_locations and _is_empty_resource_section(resource_block)):
        out.extend(resource_block)

    return _finish(out, ops, resolver, mark)


def _finish(out: list[str], ops: list[_Op], resolver: LocationResolver,
            mark: Callable[[tuple[Chain, ...]], str | None] | None = None) -> RenderedIr:
    for op in ops:
        op.chains = resolver.user_chains(op.loc)
        op.full = resolver.full_chains(op.loc)
        note = mark(resolver.all_chains(op.loc)) if mark is not None else None
        if note:
            out[op.first] += f"  // {note}"
    # Parents close after their children, so resolve inheritance from the outside in.
    for op in reversed(ops):
        if op.chains or op.parent is None or op.name in _STRUCTURAL:
            continue
        parent = ops[op.parent]
        if parent.name not in _STRUCTURAL and parent.chains:
            op.chains = parent.chains
            op.full = op.full or parent.full
            op.inherited = True

    mapping: list[IrLineMapping] = []
    frames = FrameTable()
    seen: set[tuple[int, str, int, int]] = set()
    counted = [op for op in ops if op.name not in _STRUCTURAL]
    for op in counted:
        lines = (op.first,) if op.first == op.last else (op.first, op.last)
        for ir_index in lines:
            for full in op.full:
                frames.add(ir_index + 1, full)
            for chain in op.chains:
                for depth, (file, line) in enumerate(chain):
                    key = (ir_index + 1, file, line, depth)
                    if key not in seen:
                        seen.add(key)
                        mapping.append(IrLineMapping(ir_index + 1, file, line, depth))
    mapping.sort(key=lambda m: (m.ir_line, m.depth, m.file, m.line))
    text = "\n".join(out).rstrip("\n") + "\n"
    frames.sort()
    unmapped = [op.name for op in counted if not op.chains]
    stats: dict[str, Any] = {
        "ops": len(counted),
        "mapped_ops": len(counted) - len(unmapped),
        "unmapped_ops": len(unmapped),
        "unmapped_op_names": sorted(set(unmapped)),
        "inherited_ops": sum(op.inherited for op in counted),
        "library_ops": sum(bool(op.full) for op in counted),  # made inside library code
        "ir_bytes": len(text.encode()),
    }
    return RenderedIr(text, mapping, stats, frames)

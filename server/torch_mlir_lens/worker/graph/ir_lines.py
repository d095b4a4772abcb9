"""The Torch IR lines each graph node became.

An IR line and a node made by the same Python call share their innermost user line and, when
made in library code, their innermost library line (the IR line's chain in the result's frame
table, the node's stack trace). Among a call's IR lines a node takes those naming its op
(`torch.aten.mm` for `aten.mm.default`), the k-th node of an op the k-th such line when they
pair one to one; a node whose op names none of them (a view folded away) takes them all,
when they are few.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

from torch_mlir_lens.protocol.graph import GraphNode
from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.rules.node_verdicts import op_names

_TORCH_OP = re.compile(r"\btorch\.(aten|prims)\.[\w.]+")

# A node whose op names none of its call's IR lines takes them all, up to this many (a call
# made in a loop of library code shares its lines with every other call of it).
MAX_UNNAMED = 16

Key = tuple[str, int, str, int]  # user file, line, library file, line ("", 0: none)


def _norm(path: str | None) -> str:
    return os.path.normpath(path) if path else ""


def _line_keys(result: LowerResult) -> dict[int, Key]:
    """Each mapped IR line's key."""
    keys: dict[int, Key] = {}
    for m in result.map:
        if m.depth != 0 or m.ir_line in keys:
            continue
        lib = ("", 0)
        for chain in result.frames.chains_of(m.ir_line):
            if chain and chain[0].library:
                lib = (_norm(chain[0].file), chain[0].line)
                break
        keys[m.ir_line] = (_norm(m.file), m.line, *lib)
    return keys


def _node_key(node: GraphNode) -> Key | None:
    if node.line is None:
        return None
    lib = node.library_line
    return (_norm(node.file), node.line, _norm(lib.file) if lib else "", lib.line if lib else 0)


def assign_ir_lines(nodes: Sequence[GraphNode], result: LowerResult) -> None:
    """Set each node's `ir_lines` in `result.ir` (the module's Torch IR)."""
    text = result.ir.splitlines()
    by_key: dict[Key, list[int]] = {}
    for line, key in sorted(_line_keys(result).items()):
        by_key.setdefault(key, []).append(line)
    ops_on: dict[int, set[str]] = {}
    for lines in by_key.values():
        for line in lines:
            if 0 < line <= len(text):
                ops_on[line] = set().union(*(op_names(m.group(0)) for m in
                                             _TORCH_OP.finditer(text[line - 1])))
    seen: dict[tuple[Key, str], int] = {}
    by_op: dict[tuple[Key, str], list[GraphNode]] = {}
    for node in nodes:
        node_key = _node_key(node)
        if node_key is not None:
            by_op.setdefault((node_key, node.op), []).append(node)
    for (key, op), same in by_op.items():
        lines = by_key.get(key, [])
        named = [ln for ln in lines if ops_on.get(ln, set()) & op_names(op)]
        for node in same:
            if named and len(named) == len(same):
                k = seen.get((key, op), 0)
                seen[(key, op)] = k + 1
                node.ir_lines = [named[k]]
            elif named or len(lines) <= MAX_UNNAMED:
                node.ir_lines = list(named or lines)

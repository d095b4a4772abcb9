"""What IREE made of the module: its dispatch regions, each mapped to the Python lines fused
into it.

    read_dispatches(flow_ir, users, heading=...) → DispatchView (IR text for the pane, its
                                                   line map, the dispatches, line → dispatches)

The `flow` phase's IR (compiler.py) holds one `flow.executable` per dispatch region, the ops
of its function still located at the Python lines they came from, and `main` calling each with
`flow.dispatch`. The pane shows that IR, headed by one line per dispatch naming its lines; the
IR's own map is made as for every other target (`worker/ir/ir_text.py`). A dispatch's lines are
those of its computing ops: loads and stores of its operands, `tensor.empty`, fills and
constants carry the line of whatever first made them, not of what was fused there.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.frames import FrameTable
from torch_mlir_lens.protocol.results import IrLineMapping
from torch_mlir_lens.worker.ir import ir_text
from torch_mlir_lens.worker.ir.locations import UserFiles

_EXECUTABLE = re.compile(
    r"^(?P<indent>\s*)flow\.executable (?:private |public )?@(?P<name>[\w$.-]+)")
_EXPORT = re.compile(r"flow\.executable\.export (?:public |private )?@(?P<name>[\w$.-]+)")
_OP = re.compile(r'^\s*(?:(?:%[\w.$#-]+(?::\d+)?\s*,\s*)*%[\w.$#-]+(?::\d+)?\s*=\s*)?"?'
                 r"(?P<op>[A-Za-z_][\w$]*\.[\w$.]+)")
# Ops that say where a value came from, not what the dispatch computes.
_NOT_COMPUTING = {"tensor.empty", "linalg.fill", "linalg.yield", "arith.constant",
                  "iree_tensor_ext.dispatch.tensor.load", "iree_tensor_ext.dispatch.tensor.store",
                  "iree_tensor_ext.dispatch.workgroup_count_from_slice", "flow.return",
                  "flow.executable.export", "func.return", "util.return"}
_CPU_FEATURES = re.compile(r'cpu_features = "[^"]{80,}"')


@dataclass
class Dispatch:
    """One dispatch region: its index, its entry point, the lines fused into it."""

    index: int  # its place among the module's dispatch regions, from 0
    name: str  # the executable (`main_dispatch_0`)
    entry: str  # its entry point (`main_dispatch_0_matmul_2x32x16_f32`), what profiles name
    lines: list[tuple[str, int]] = field(default_factory=list)  # most ops first
    # The library lines (a model from `transformers`) its ops were made at, most ops first:
    # all of a library model's dispatches share the user's one line that calls it.
    library_lines: list[tuple[str, int]] = field(default_factory=list)
    ops: int = 0  # computing ops inside it
    ir_line: int = 0  # its header line in the pane (1-based)
    time_ms: float | None = None  # measured per call (timing.py), when profiled

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"index": self.index, "name": self.name, "entry": self.entry,
                                "lines": [{"file": f, "line": n} for f, n in self.lines],
                                "ops": self.ops, "ir_line": self.ir_line}
        if self.library_lines:
            data["library_lines"] = [{"file": f, "line": n} for f, n in self.library_lines]
        if self.time_ms is not None:
            data["time_ms"] = round(self.time_ms, 6)
        return data


@dataclass
class DispatchView:
    """The pane's text and map, and the dispatches with their lines."""

    text: str
    map: list[IrLineMapping]
    stats: dict[str, Any]
    dispatches: list[Dispatch]
    frames: FrameTable = field(default_factory=FrameTable)  # library chains, as every pane

    def line_dispatches(self) -> list[dict[str, Any]]:
        """Each user line with the dispatches it landed in (for hovers)."""
        found: dict[tuple[str, int], list[int]] = {}
        for d in self.dispatches:
            for frame in d.lines:
                found.setdefault(frame, []).append(d.index)
        return [{"file": f, "line": n, "dispatches": sorted(set(idx))}
                for (f, n), idx in sorted(found.items())]


def _frames_by_line(mapping: list[IrLineMapping]) -> dict[int, list[tuple[str, int]]]:
    out: dict[int, list[tuple[str, int]]] = {}
    for m in mapping:
        if m.depth == 0:
            out.setdefault(m.ir_line, []).append((m.file, m.line))
    return out


def _library_frame(table: FrameTable, ir_line: int) -> tuple[str, int] | None:
    """The innermost library frame of an IR line's first chain through library code."""
    for chain in table.chains_of(ir_line):
        for frame in chain:
            if frame.library:
                return frame.file, frame.line
    return None


def _find(text: str, mapping: list[IrLineMapping], table: FrameTable) -> list[Dispatch]:
    lines = text.split("\n")
    frames = _frames_by_line(mapping)
    found: list[Dispatch] = []
    i = 0
    while i < len(lines):
        m = _EXECUTABLE.match(lines[i])
        if m is None:
            i += 1
            continue
        closing = m.group("indent") + "}"
        end = next((j for j in range(i + 1, len(lines)) if lines[j] == closing), len(lines))
        entry, counts, ops = m.group("name"), Counter[tuple[str, int]](), 0
        library = Counter[tuple[str, int]]()
        for j in range(i, end):
            exported = _EXPORT.search(lines[j])
            if exported:
                entry = exported.group("name")
            op = _OP.match(lines[j])
            if op is None or op.group("op") in _NOT_COMPUTING or op.group("op").startswith(
                    ("flow.executable", "builtin.", "func.func")):
                continue
            ops += 1
            counts.update(dict.fromkeys(frames.get(j + 1, []), 1))
            made_at = _library_frame(table, j + 1)
            if made_at is not None:
                library[made_at] += 1
        # Numbered in the order IREE lists them: its own names repeat a number
        # (`_initializer_0_dispatch_0` beside `main_dispatch_0`).
        found.append(Dispatch(len(found), m.group("name"),
                              entry, [frame for frame, _n in counts.most_common()],
                              [frame for frame, _n in library.most_common(3)], ops,
                              ir_line=i + 1))
        i = end + 1
    return found


def _heading_lines(title: str, dispatches: list[Dispatch]) -> list[str]:
    out = [f"// {title}: {len(dispatches)} dispatch region"
           f"{'' if len(dispatches) == 1 else 's'}, each with the lines fused into it"]
    for d in dispatches:
        where = ", ".join(f"{os.path.basename(f)}:{n}" for f, n in d.lines) or "no user line"
        inside = "".join(f" ({os.path.basename(f)}:{n})" for f, n in d.library_lines[:1])
        out.append(f"//   dispatch {d.index}  @{d.entry}  ← {where}{inside}")
    return out


def read_dispatches(flow_ir: str, users: UserFiles, *, heading: str) -> DispatchView:
    """The dispatch view of IREE's `flow`-phase IR: headed by one line per dispatch (mapped to
    its lines), then the IR, mapped as every pane is."""
    rendered = ir_text.render(_CPU_FEATURES.sub('cpu_features = "…"', flow_ir), users)
    dispatches = _find(rendered.text, rendered.map, rendered.frames)
    head = _heading_lines(heading, dispatches)
    shift = len(head)
    frames = FrameTable()
    for ir_line in rendered.frames.ir_lines():
        for chain in rendered.frames.chains_of(ir_line):
            frames.add(ir_line + shift, chain)
    frames.sort()
    mapping = [IrLineMapping(m.ir_line + shift, m.file, m.line, m.depth) for m in rendered.map]
    for row, d in enumerate(dispatches, start=2):
        mapping.extend(IrLineMapping(row, f, n, 0) for f, n in d.lines)
        d.ir_line += shift
    mapping.sort(key=lambda m: (m.ir_line, m.depth, m.file, m.line))
    text = "\n".join(head) + "\n" + rendered.text
    stats = {**rendered.stats, "ir_bytes": len(text.encode())}
    return DispatchView(text, mapping, stats, dispatches, frames)


__all__ = ["Dispatch", "DispatchView", "read_dispatches"]

"""The `fx` target of a stitched program: the parent's ATen graph, then each block's, mapped.

The parent's graph shows each block call as one `torch_mlir_lens_blocks.call_*` node; below
it, each group's function as PyTorch prints it, under a comment naming the function, its
class and its calls. Each graph's lines map to the source as the `fx` target always does.
"""

from __future__ import annotations

from typing import Any

from torch_mlir_lens.protocol.frames import FrameTable
from torch_mlir_lens.protocol.results import IrLineMapping, LowerResult
from torch_mlir_lens.worker.ir.locations import UserFiles


def fx_result(module_name: str, program: Any, users: UserFiles) -> LowerResult:
    """The `fx` result of a `StitchedProgram` (always ok)."""
    from torch_mlir_lens.worker.stages.artifacts import fx_text_and_map

    pieces: list[tuple[str, Any]] = [("", program.parent)]
    for block in program.blocks:
        title = (f"# @{block.symbol}: one function for the {block.calls} calls of "
                 f"{block.class_name} ({', '.join(block.paths[:3])}"
                 f"{', ...' if len(block.paths) > 3 else ''})")
        pieces.append((title, block.traced.program))
    lines: list[str] = []
    mapping: list[IrLineMapping] = []
    frames = FrameTable()
    ops = 0
    for title, graph_program in pieces:
        if title:
            lines += ["", title]
        text, piece_map, piece_frames = fx_text_and_map(graph_program, users)
        offset = len(lines)
        lines += text.splitlines()
        mapping += [IrLineMapping(m.ir_line + offset, m.file, m.line, m.depth)
                     for m in piece_map]
        for ir_line in piece_frames.ir_lines():
            for chain in piece_frames.chains_of(ir_line):
                frames.add(ir_line + offset, chain)
        ops += sum(1 for n in graph_program.graph.nodes if n.op == "call_function")
    text = "\n".join(lines) + "\n"
    mapped = {m.ir_line for m in mapping}
    stats = {"ops": ops, "mapped_ops": len(mapped), "unmapped_ops": max(ops - len(mapped), 0),
             "unmapped_op_names": [], "ir_bytes": len(text.encode())}
    return LowerResult(module_name, "fx", True, text, mapping, [], stats, frames=frames)


__all__ = ["fx_result"]

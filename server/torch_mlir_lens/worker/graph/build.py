"""The graph of one exported program with its verdicts: what the `graph` job answers.

The program is the one every lowering of the module uses (stitched when its blocks are
proven), so the graph shows each repeated block's function once. Its Torch IR gives the
nodes' IR lines; each backend's lowering (through the module's rewrites, with the plain one
beside it to tell what they took it past) gives their verdicts (`rules/node_verdicts.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from torch_mlir_lens.protocol.graph import ModuleGraph
from torch_mlir_lens.protocol.results import LowerResult
from torch_mlir_lens.rules.node_verdicts import apply_verdicts
from torch_mlir_lens.worker.graph.fx_graph import fx_graph
from torch_mlir_lens.worker.graph.ir_lines import assign_ir_lines
from torch_mlir_lens.worker.ir.locations import UserFiles

# target → (the module's lowering, its plain lowering when rewrites made the first)
Lowered = Callable[[str], tuple[LowerResult, LowerResult | None]]


def build_graph(program: Any, *, module: str, file: str, user_files: list[str],
                torch_ir: LowerResult, targets: list[str], lowered: Lowered) -> ModuleGraph:
    """The module's graph: nodes from `program`, IR lines from `torch_ir`, each target's
    verdicts from `lowered(target)`."""
    start = time.perf_counter()
    parts = fx_graph(program, UserFiles(user_files))
    graph = ModuleGraph(module=module, file=file, targets=list(targets), nodes=parts.nodes,
                        edges=parts.edges, groups=parts.groups, ir=torch_ir.ir)
    assign_ir_lines(graph.nodes, torch_ir)
    walked = time.perf_counter()
    for target in targets:
        result, plain = lowered(target)
        apply_verdicts(graph, target, result, plain)
    graph.stats = {
        "nodes": len(graph.nodes), "edges": len(graph.edges), "groups": len(graph.groups),
        "blocks": sum(1 for g in graph.groups if g.kind == "block"),
        "stitched": bool(getattr(program, "is_stitched", False)),
        "seconds": {"graph": round(walked - start, 4),
                    "verdicts": round(time.perf_counter() - walked, 4)},
    }
    return graph

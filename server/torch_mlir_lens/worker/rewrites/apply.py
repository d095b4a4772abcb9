"""A program with rewrites applied: torch-mlir's decomposition table plus the rewrites'
entries, run on the program torch.export made (the user's code is never edited).

    remember(decomposed, exported)       torch_export.py keeps the program before its decompositions
    rewritten(program, rewrites)         → the program decomposed again with the rewrites
    made_by(frames)                      → the rewrite that made an op (its location's frames)

Each node a rewrite made gets one more frame in its stack trace, innermost: the rewrite's
function in this package. torch-mlir's importer puts it into the op's location like any frame;
the user's line stays the op's line (frames of this package are never the user's nor a
library's), and the IR pane and hovers read it back to say which rewrite made the op.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.worker.process import WORKER
from torch_mlir_lens.worker.rewrites.table import Rewrite, table_of


@dataclass
class _Made:
    """What each program was exported from, and the rewrites' frames (the worker's part)."""

    exported: weakref.WeakKeyDictionary[Any, Any] = field(
        default_factory=weakref.WeakKeyDictionary)
    frames: dict[tuple[str, int], str] = field(default_factory=dict)  # (file, line) → rewrite


def _made() -> _Made:
    return WORKER.part(_Made)


def remember(decomposed: Any, exported: Any) -> None:
    """Keep what torch.export made of a module, before decompositions, beside the result."""
    _made().exported[decomposed] = exported


def exported_of(program: Any) -> Any | None:
    """The program before decompositions, when torch_export.py kept it."""
    return _made().exported.get(program)


def _frame(rewrite: Rewrite, fn: Any) -> str:
    """The stack-trace frame that says "made by this rewrite"."""
    code = getattr(fn, "__code__", None)
    file = inspect.getsourcefile(fn) if code is not None else None
    line = code.co_firstlineno if code is not None else 1
    if not file:
        return ""
    _made().frames[(file, line)] = rewrite.name
    return f'  File "{file}", line {line}, in {fn.__name__}\n    rewrite {rewrite.name}\n'


def _tag(program: Any, rewrites: Iterable[Rewrite]) -> set[str]:
    """Mark the nodes each rewrite made (meta `original_aten` is the op it replaced);
    the names of the rewrites that made some."""
    # By name: the op a node's meta keeps is a copy of the overload, not the same object.
    frames: dict[str, tuple[str, str]] = {}
    for rewrite in rewrites:
        for op, fn in rewrite.table().items():
            frames[str(op)] = (rewrite.name, _frame(rewrite, fn))
    used: set[str] = set()
    for node in program.graph.nodes:
        origin = str(node.meta.get("original_aten"))
        if node.op != "call_function" or origin not in frames or str(node.target) == origin:
            continue
        name, frame = frames[origin]
        used.add(name)
        if frame:
            node.meta["stack_trace"] = (node.meta.get("stack_trace") or "") + frame
        node.meta["torch_mlir_lens_rewrite"] = name
    return used


def rewritten(program: Any, rewrites: list[Rewrite]) -> tuple[Any, set[str]]:
    """The program torch.export made of `program`'s module, decomposed with torch-mlir's
    table and the rewrites' entries (which win); and the names of the rewrites it used.
    Raises what the decompositions raise (a rewrite that cannot be traced)."""
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    from torch_mlir_lens.worker.shims.custom_ops import run_decompositions
    from torch_mlir_lens.worker.shims.region_origins import restore_region_origins

    exported = exported_of(program)
    if exported is None:
        raise ValueError("the program before decompositions was not kept")
    result = run_decompositions(exported, {**get_decomposition_table(), **table_of(rewrites)})
    restore_region_origins(exported, result)
    remember(result, exported)
    return result, _tag(result, rewrites)


def made_by(frames: Iterable[tuple[str, int]]) -> str | None:
    """The rewrite whose frame is among an op's frames (file, line), or None."""
    for frame in frames:
        name = _made().frames.get(frame)
        if name is not None:
            return name
    return None


__all__ = ["exported_of", "made_by", "remember", "rewritten"]

"""Figure 18's counts and table (bench/figures/fig18_iree.py) from rows as bench/iree_sweep.py
writes them: a module verified on IREE CPU, one IREE refuses on Vulkan without a line, one
torch-mlir does not lower, a crash."""

from __future__ import annotations

from typing import Any

from bench.figures import FIGURES, fig18_iree
from bench.report import FigureResult


def _target(compiled: bool, error: str = "", located: bool = True) -> dict[str, Any]:
    return {"compiled": compiled, "ok": compiled, "compile_s": 1.5, "dispatches": 3,
            "error": error, "located": located}


ROWS = [
    {"corpus": "zoo", "name": "TinyLlama", "linalg": True, "lowering_s": 3.0,
     "iree-cpu": _target(True), "iree-cuda": _target(True), "iree-rocm": _target(True),
     "iree-vulkan": _target(False, "IREE Vulkan cannot compile the module: f64", False),
     "verify": {"ok": True, "message": "✓ matches eager (max err 3e-07)",
                "speed": {"compiled_ms": 0.3, "eager_ms": 1.2, "threads": 1}}},
    {"corpus": "zoo", "name": "TinyMoE", "linalg": False, "lowering_s": 2.0,
     **{t: _target(False, "`aten.histc` cannot be lowered to Linalg") for t in fig18_iree.IREE}},
    {"corpus": "broad", "name": "bert", "crash": True},
]


def test_counts_the_chain_the_gpu_compiles_and_the_times() -> None:
    assert fig18_iree in FIGURES
    result = FigureResult(18, fig18_iree.TITLE)
    fig18_iree.summarize(result, ROWS)
    metrics = {m.name.split(":")[0]: m for m in result.metrics}
    assert metrics["zoo"].value == 1
    assert metrics["zoo"].note.startswith("1 → 1 → 1; GPU compiles (no GPU): cuda 1, rocm 1, "
                                          "vulkan 0")
    by_name = {m.name: m for m in result.metrics}
    unlocated = by_name["IREE errors without a line"]
    assert (unlocated.value, unlocated.note) == (1, "TinyLlama@iree-vulkan")
    ratio = next(m for m in result.metrics if m.name.startswith("compiled (IREE CPU)"))
    assert ratio.value == 0.25 and "1 faster compiled" in ratio.note
    compile_ratio = next(m for m in result.metrics if m.name.startswith("IREE CPU compile"))
    assert compile_ratio.value == 0.5
    crashed = next(m for m in result.metrics if m.name.startswith("modules whose sweep"))
    assert (crashed.value, crashed.verdict) == (1, "FAIL")
    text = fig18_iree.table(ROWS)
    assert "| zoo | TinyLlama | ✓ 3.0 s | ✓ 1.5 s, 3 dispatches |" in text
    assert "| 0.3 / 1.2 ms |" in text and "| broad | bert | ✗ crashed |" in text

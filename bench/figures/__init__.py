"""One module per figure; each has NUMBER, NAME, TITLE and `async def run(ctx)`."""

from __future__ import annotations

from types import ModuleType

from bench.figures import (
    fig1_overhead,
    fig2_hover,
    fig3_static,
    fig4_submodule,
    fig5_edit_loop,
    fig6_memory,
    fig7_cold_start,
    fig8_zoo,
    fig9_scale,
    fig10_repo_check,
    fig11_dynamic,
    fig12_reopen,
    fig13_broad_zoo,
    fig14_blocks,
    fig15_rewrites,
    fig16_beyond,
    fig17_onnx,
    fig18_iree,
)

FIGURES: list[ModuleType] = [
    fig1_overhead,
    fig2_hover,
    fig3_static,
    fig4_submodule,
    fig5_edit_loop,
    fig6_memory,
    fig7_cold_start,
    fig8_zoo,
    fig9_scale,
    fig10_repo_check,
    fig11_dynamic,
    fig12_reopen,
    fig13_broad_zoo,
    fig14_blocks,
    fig15_rewrites,
    fig16_beyond,
    fig17_onnx,
    fig18_iree,
]

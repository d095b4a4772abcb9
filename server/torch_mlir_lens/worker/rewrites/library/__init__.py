"""The rewrites kept in this repository, for the culprits that matter most.

Chosen by measuring two corpora (torch-mlir's e2e suite and every `transformers` model type,
README "Rewrites"): `erfinv` (no backend has it, and torch's own decomposition goes to
`prims.erf_inv`, which torch-mlir rejects too), `histc` (every mixture of experts' router
counts its tokens with it; torch-mlir does not know it), zero-sized tensors on TOSA (an empty
slice of a rotary embedding). Each function is plain PyTorch with a docstring on its method,
accuracy and domain; each `Rewrite` says which ops it answers.

    LIBRARY          every library rewrite, by name
"""

from __future__ import annotations

from torch_mlir_lens.worker.rewrites.library import counting, empty, movement, ordering, special
from torch_mlir_lens.worker.rewrites.model import EMPTY_REGION, Rewrite

_ALL = (
    Rewrite(
        name="erfinv",
        culprits=("aten.erfinv",),
        entries=(("aten.erfinv.default", special.erfinv_newton),),
        method="rational approximation (Giles) refined by two Newton steps on erf",
        domain=(1.0, -1.0, 0.9999999, -0.9999999, 1.5, -1.5, 1e-30, -1e-30),
    ),
    Rewrite(
        name="histc",
        culprits=("aten.histc",),
        entries=(("aten.histc.default", counting.histc_by_comparison),),
        method="each element's bin by PyTorch's formula, counted by comparisons and a sum",
        domain=(0.0, 1.0, 2.0, 3.0, 0.5, 2.5, 3.999999),
    ),
    Rewrite(
        name="empty_tensors",
        culprits=("aten.slice.Tensor", "aten.slice_scatter", "aten.cat", "aten.sum.dim_IntList",
                  "aten.empty.memory_format", "aten.new_empty"),
        entries=(("aten.cat.default", empty.cat_without_empty),
                 ("aten.slice_scatter.default", empty.slice_scatter_of_empty),
                 ("aten.sum.dim_IntList", empty.sum_of_empty)),
        method="ops that take a zero-sized tensor without reading it removed (cat, "
               "slice_scatter, sum), so the empty slice is dropped",
        scope=EMPTY_REGION,
        helpers=(empty._empty,),
    ),
    Rewrite(
        name="sort",
        culprits=("aten.sort", "aten.sort.stable"),
        entries=(("aten.sort.default", ordering.sort_by_ranks),
                 ("aten.sort.stable", ordering.sort_stable_by_ranks)),
        method="each element's rank by counting comparisons, values gathered by rank",
        helpers=(ordering._ranks,),
    ),
    Rewrite(
        name="roll",
        culprits=("aten.roll",),
        entries=(("aten.roll.default", movement.roll_by_slices),),
        method="two static slices concatenated per dim",
    ),
)

LIBRARY: dict[str, Rewrite] = {r.name: r for r in _ALL}

__all__ = ["LIBRARY"]

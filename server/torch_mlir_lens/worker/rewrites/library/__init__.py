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

from torch_mlir_lens.worker.rewrites.library import (
    convolution,
    counting,
    empty,
    movement,
    ordering,
    pooling,
    quantized,
    scatter,
    special,
)
from torch_mlir_lens.worker.rewrites.table import EMPTY_REGION, Rewrite

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
        name="max_pool",
        culprits=("aten.max_pool2d", "aten.max_pool3d", "aten.max_pool2d_with_indices",
                  "aten.max_pool3d_with_indices", "aten.adaptive_max_pool1d",
                  "aten.adaptive_max_pool2d", "aten.adaptive_max_pool3d"),
        entries=(("aten.max_pool2d.default", pooling.max_pool2d_by_gather),
                 ("aten.max_pool3d.default", pooling.max_pool3d_by_gather),
                 ("aten.max_pool2d_with_indices.default",
                  pooling.max_pool2d_with_indices_by_gather),
                 ("aten.max_pool3d_with_indices.default",
                  pooling.max_pool3d_with_indices_by_gather),
                 ("aten.adaptive_max_pool1d.default", pooling.adaptive_max_pool_by_gather),
                 ("aten.adaptive_max_pool2d.default", pooling.adaptive_max_pool_by_gather),
                 ("aten.adaptive_max_pool3d.default", pooling.adaptive_max_pool_by_gather)),
        method="windows gathered by constant index tables, their maximum and its index",
        domain=(-3.0, 3.0),
        helpers=(pooling._spec, pooling._out_size, pooling._affine, pooling._gather,
                 pooling._windows, pooling._lowest, pooling._positions,
                 pooling._max_and_index, pooling._pool_tables, pooling._max_pool,
                 pooling._adaptive_tables),
    ),
    Rewrite(
        name="avg_pool",
        culprits=("aten.avg_pool2d", "aten.avg_pool3d", "aten._adaptive_avg_pool2d",
                  "aten._adaptive_avg_pool3d", "aten.adaptive_avg_pool1d"),
        entries=(("aten.avg_pool2d.default", pooling.avg_pool2d_by_gather),
                 ("aten.avg_pool3d.default", pooling.avg_pool3d_by_gather),
                 ("aten._adaptive_avg_pool2d.default", pooling.adaptive_avg_pool_by_gather),
                 ("aten._adaptive_avg_pool3d.default", pooling.adaptive_avg_pool_by_gather),
                 ("aten.adaptive_avg_pool1d.default", pooling.adaptive_avg_pool_by_gather)),
        method="windows gathered by constant index tables, summed and divided by their count",
        helpers=(pooling._spec, pooling._out_size, pooling._affine, pooling._gather,
                 pooling._windows, pooling._pool_tables, pooling._avg_pool,
                 pooling._adaptive_tables),
        extremes=False,
    ),
    Rewrite(
        name="cumprod",
        culprits=("aten.cumprod",),
        entries=(("aten.cumprod.default", ordering.cumprod_in_order),),
        method="a running product taken in order, one slice at a time",
    ),
    Rewrite(
        name="kthvalue",
        culprits=("aten.kthvalue",),
        entries=(("aten.kthvalue.default", ordering.kthvalue_by_ranks),),
        method="the element of rank k-1, ranks by counting comparisons",
        helpers=(ordering._ranks,),
    ),
    Rewrite(
        name="scatter",
        culprits=("aten.scatter_reduce.two", "aten.scatter_add", "aten.index_put",
                  "aten.index_put.hacked_twin", "aten._index_put_impl"),
        entries=(("aten.scatter_reduce.two", scatter.scatter_reduce_by_one_hot),
                 ("aten.scatter_add.default", scatter.scatter_add_by_one_hot),
                 ("aten.index_put.default", scatter.index_put_by_one_hot),
                 ("aten.index_put.hacked_twin", scatter.index_put_by_one_hot),
                 ("aten._index_put_impl.default", scatter.index_put_impl_by_one_hot)),
        method="each target compared with every index (one-hot), the values aimed at it "
               "reduced there",
        helpers=(scatter._extreme, scatter.index_put_by_one_hot),
        extremes=False,
    ),
    Rewrite(
        name="grouped_conv",
        culprits=("aten.convolution",),
        entries=(("aten.convolution.default", convolution.convolution_per_group),),
        method="one convolution per group, concatenated along the channels",
        extremes=False,
        nonfinite=False,
    ),
    Rewrite(
        name="trig",
        culprits=("aten.atan2", "aten.asin", "aten.acos", "aten.sinh", "aten.cosh",
                  "aten.asinh", "aten.acosh", "aten.atanh"),
        entries=(("aten.atan2.default", special.atan2_by_atan),
                 ("aten.asin.default", special.asin_by_atan),
                 ("aten.acos.default", special.acos_by_atan),
                 ("aten.sinh.default", special.sinh_by_expm1),
                 ("aten.cosh.default", special.cosh_by_exp),
                 ("aten.asinh.default", special.asinh_by_log1p),
                 ("aten.acosh.default", special.acosh_by_log1p),
                 ("aten.atanh.default", special.atanh_by_log1p)),
        method="inverse and hyperbolic functions from atan, sqrt, exp, expm1 and log1p",
        domain=(0.9999999, -0.9999999, 100.0, -100.0, 1e-20, -1e-20, 3.0e38),
        helpers=(special._floating, special._negative),
    ),
    Rewrite(
        name="quantized_per_channel",
        culprits=("quantized_decomposed.dequantize_per_channel",
                  "quantized_decomposed.quantize_per_channel"),
        entries=(("quantized_decomposed.dequantize_per_channel.default",
                  quantized.dequantize_per_channel_by_scale),
                 ("quantized_decomposed.quantize_per_channel.default",
                  quantized.quantize_per_channel_by_scale)),
        method="torch's own definitions: scale and zero point broadcast per channel",
        helpers=(quantized._along,),
    ),
    Rewrite(
        name="nearest",
        culprits=("aten.upsample_nearest2d", "aten.upsample_nearest2d.vec",
                  "aten.__interpolate.size_list_scale_list"),
        entries=(("aten.upsample_nearest2d.default", movement.upsample_nearest2d_by_gather),
                 ("aten.upsample_nearest2d.vec", movement.upsample_nearest2d_vec_by_gather)),
        method="each output reads the input at PyTorch's nearest index, by two gathers",
        helpers=(movement._nearest_index, movement.upsample_nearest2d_by_gather),
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

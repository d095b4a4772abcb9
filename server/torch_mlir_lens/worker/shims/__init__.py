"""Upstream shims: narrow fixes around what torch.export or torch-mlir get wrong or refuse.

Each shim says at its top which upstream behaviour it works around and how to tell when it can
go; ARCHITECTURE.md lists them with their issues.

- `frozen_import`: an exported program imported with every lifted tensor frozen in
- `list_constants`: frozen tensors inside tensor lists handed over as attributes
- `legacy_view_shim`: views torch-mlir lowers to wrong Linalg when two dynamic dims merge
- `scatter_dims`: scatter ops get a non-negative `dim` before any pass sees them
- `slice_bounds`: `slice_scatter` bounds clamped before StableHLO sees them
- `sym_minmax`: `torch.sym_min` / `torch.sym_max` imported as `prim::min` / `prim::max`
- `topk_sorted`: `topk(..., sorted=False)` asked for as `sorted=True`
- `custom_ops`: library custom ops decomposed into aten ops before the import
- `region_origins`: ops of a `no_grad` / autocast region given back the user's line and call
"""

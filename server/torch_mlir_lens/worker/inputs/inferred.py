"""Inferred inputs: `forward` takes one tensor and its first layer tells the shape.

The statically found first layer (discovery) names the attribute; the built module gives the
real layer and its sizes; `discovery.layer_inputs_expr` writes the same expression the quick fix
suggests.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from torch_mlir_lens.discovery import INFERABLE_LAYERS, ModuleInfo, layer_inputs_expr
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.inputs.construction import LazyInstance


def required_forward_args(obj: Any) -> int | None:
    """How many positional parameters of `forward` (or of the function) have no default."""
    fn = getattr(obj, "forward", None) if isinstance(obj, type) else obj
    if fn is None:
        return None
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if isinstance(obj, type):
        params = params[1:]
    return sum(
        1 for p in params
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )


def _layer_kind(layer: torch.nn.Module) -> str | None:
    """The torch.nn class (from the layer's MRO) whose input shape is known."""
    for cls in type(layer).__mro__:
        if cls.__module__.startswith("torch.nn") and cls.__name__ in INFERABLE_LAYERS:
            return cls.__name__
    return None


def _first_layer(model: torch.nn.Module, attr: str | None) -> torch.nn.Module | None:
    """The first layer used (the statically found attribute), followed into containers."""
    module = getattr(model, attr, None) if attr else None
    if not isinstance(module, torch.nn.Module):
        module = next((m for m in model.modules() if _layer_kind(m)), None)
    while module is not None and _layer_kind(module) is None:
        module = next(iter(module.children()), None)
    return module


_LAYER_ATTRS = ("in_features", "in_channels", "num_embeddings", "input_size", "batch_first",
                "normalized_shape", "num_features")


def inferred_inputs(
    obj: Any, info: ModuleInfo | None, instance: LazyInstance,
) -> tuple[str, str] | None:
    """(expression, explanation) of an input shaped for the first layer, or None."""
    if not isinstance(obj, type) or required_forward_args(obj) != 1:
        return None
    if info is not None and info.init_required and not instance.init[0] and not instance.init[1]:
        return None  # constructor arguments unknown
    try:
        model = instance.get()
    except LensError:
        return None
    attr = info.first_layer.attr if info is not None and info.first_layer else None
    layer = _first_layer(model, attr)
    kind = _layer_kind(layer) if layer is not None else None
    if layer is None or kind is None:
        return None
    params = {k: getattr(layer, k) for k in _LAYER_ATTRS if hasattr(layer, k)}
    expr = layer_inputs_expr(kind, params)
    if expr is None:
        return None
    return expr, f"first layer {kind}: {expr}"

"""Ways past rejected nodes that belong to ONNX, applied to the model, never to the file.

    apply(model, "opset", dims) → (the changed model, what was done) | None (does not apply)
    prove(model, path, "opset", backend, dims) → FixProof

- `opset`: torch-mlir converts each ONNX operator from some opset on; a model of an older
  opset (the `light/` models are opset 9: `MaxPool`, `Concat`, `BatchNormalization` stay
  `torch.operator`s) is converted to opset 17 with `onnx.version_converter`;
- `shapes`: dynamic dims (`dim_param`) pinned to their sizes (`ModuleJob.dims`, else 1) and
  shapes inferred again: every type static (TOSA rejects most dynamic sizes);
- `fold`: nodes that compute shapes from constants and static shapes (`Shape`, `Gather`,
  `Concat`, ... of small integer tensors) evaluated by ONNX's reference runtime and replaced,
  in place, by `Constant` nodes (the node numbers stay the same).

A fix is proven as a rewrite is: the changed model lowers further on the backend (fewer
rejected nodes, or none) and Verify of its IR matches onnxruntime running the model as the
file has it. Only a proven fix is offered.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from torch_mlir_lens.rules.onnx_nodes import FIX_TITLES, FIXES, FOLD_FIX, OPSET_FIX, SHAPES_FIX
from torch_mlir_lens.worker.onnx.importing import infer_shapes
from torch_mlir_lens.worker.onnx.model_file import default_opset
from torch_mlir_lens.worker.onnx.reference import dynamic_dims

OPSET_TARGET = 17  # what `opset` converts to: every conversion the light/ models need exists
FOLDABLE = {"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Reshape",
            "Mul", "Add", "Sub", "Div", "Equal", "Where", "ConstantOfShape", "Range",
            "ReduceProd", "Identity", "Expand", "Size", "Neg", "Max", "Min", "Floor"}
FOLD_MAX_ELEMENTS = 1024  # a shape computation's tensors are small; weights are not folded


@dataclass
class FixProof:
    """Whether a fix takes a model further on a backend, and matches onnxruntime."""

    name: str
    detail: str  # what it did, in words ("" when it does not apply)
    applies: bool
    proven: bool = False
    before: int = 0  # rejected nodes without it
    after: int = 0  # and with it
    error: float | None = None  # Verify's max abs error against onnxruntime
    why: str = ""  # why it is not proven


def apply(model: onnx.ModelProto, name: str, dims: dict[str, int],
          ) -> tuple[onnx.ModelProto, str] | None:
    """The model changed by the fix `name` and what was done; None when it does not apply."""
    if name == OPSET_FIX:
        return _upgraded(model)
    if name == SHAPES_FIX:
        return _static(model, dims)
    if name == FOLD_FIX:
        return _folded(model)
    raise ValueError(f"unknown ONNX fix {name!r} (one of {', '.join(FIXES)})")


def _upgraded(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str] | None:
    if not 0 < default_opset(model) < OPSET_TARGET:
        return None
    try:
        converted = onnx.version_converter.convert_version(model, OPSET_TARGET)
    except Exception:  # the converter has no adapter for some node: the fix does not apply
        return None
    return converted, FIX_TITLES[OPSET_FIX].format(opset=OPSET_TARGET)


def _static(model: onnx.ModelProto, dims: dict[str, int]) -> tuple[onnx.ModelProto, str] | None:
    names = dynamic_dims(model)
    if not names:
        return None
    sizes = {n: int(dims.get(n, 1)) for n in names}
    work = copy.deepcopy(model)
    for value in list(work.graph.input) + list(work.graph.output):
        for d in value.type.tensor_type.shape.dim:
            if d.HasField("dim_param"):
                size = sizes.get(d.dim_param)
                d.Clear()
                if size is not None and value in work.graph.input:
                    d.dim_value = size
    del work.graph.value_info[:]
    said = ", ".join(f"{n}={s}" for n, s in sizes.items())
    return infer_shapes(work), FIX_TITLES[SHAPES_FIX].format(dims=said)


def _small(array: np.ndarray) -> bool:
    return array.size <= FOLD_MAX_ELEMENTS and (np.issubdtype(array.dtype, np.integer)
                                                or array.dtype == np.bool_)


def _folded(model: onnx.ModelProto) -> tuple[onnx.ModelProto, str] | None:
    from onnx.reference import ReferenceEvaluator

    work = infer_shapes(copy.deepcopy(model))
    known: dict[str, np.ndarray] = {}
    for t in work.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            array = numpy_helper.to_array(t)
            if _small(array):
                known[t.name] = array
    shapes = {v.name: v.type.tensor_type.shape for v in
              list(work.graph.value_info) + list(work.graph.input) + list(work.graph.output)}
    opsets = list(work.opset_import)
    count = 0
    for node in work.graph.node:
        value = _evaluate(node, known, shapes, opsets, ReferenceEvaluator)
        if value is None:
            continue
        for out, array in zip(node.output, value, strict=False):
            known[out] = array
        if node.op_type != "Constant":
            replacement = helper.make_node("Constant", [], [node.output[0]], name=node.name,
                                           value=numpy_helper.from_array(value[0]))
            node.CopyFrom(replacement)
            count += 1
    if not count:
        return None
    return infer_shapes(work), FIX_TITLES[FOLD_FIX].format(count=count)


def _evaluate(node: onnx.NodeProto, known: dict[str, np.ndarray], shapes: dict[str, Any],
              opsets: list[Any], evaluator: Any) -> list[np.ndarray] | None:
    """A foldable node's outputs when every input is known (a `Shape` of a static shape)."""
    if node.domain not in ("", "ai.onnx") or len(node.output) != 1:
        return None
    if node.op_type == "Constant":
        attr = next((a for a in node.attribute if a.name == "value"), None)
        if attr is None:
            return None
        array = numpy_helper.to_array(attr.t)
        return [array] if _small(array) else None
    if node.op_type not in FOLDABLE:
        return None
    inputs = [n for n in node.input if n]
    if node.op_type == "Shape" and inputs and inputs[0] not in known:
        shape = shapes.get(inputs[0])
        if shape is None or not shape.dim or any(not d.HasField("dim_value") for d in shape.dim):
            return None
        known_shape = np.array([d.dim_value for d in shape.dim], dtype=np.int64)
        start = next((a.i for a in node.attribute if a.name == "start"), 0)
        end = next((a.i for a in node.attribute if a.name == "end"), None)
        return [known_shape[start:end]]
    if not inputs or any(n not in known for n in inputs):
        return None
    graph = helper.make_graph([node], "fold", [helper.make_tensor_value_info(n, 0, None)
                                               for n in inputs],
                              [helper.make_tensor_value_info(node.output[0], 0, None)])
    try:
        outputs = evaluator(helper.make_model(graph, opset_imports=opsets)).run(
            None, {n: known[n] for n in inputs})
    except Exception:
        return None
    result = [np.asarray(o) for o in outputs]
    return result if all(_small(r) for r in result) else None


def applied(model: onnx.ModelProto, names: list[str], dims: dict[str, int],
            ) -> tuple[onnx.ModelProto, list[str]]:
    """The model with each of `names` that applies, in the order of FIXES; which did."""
    done = []
    for name in FIXES:
        if name in names:
            changed = apply(model, name, dims)
            if changed is not None:
                model, _detail = changed
                done.append(name)
    return model, done

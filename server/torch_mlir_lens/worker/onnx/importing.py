"""An ONNX model into the Torch dialect with the importer of the torch-mlir wheel
(`torch_mlir.extras.onnx_importer`, what `torch-mlir-import-onnx` runs), each op at its node.

    import_model(model, path, ctx) → Imported (module op, node keys)

As the wheel's tool does, shapes are inferred first (with data propagation: the sizes a
`Shape` → `Gather` → `Reshape` chain computes become static types); unlike it, a model whose
weights are in external data files is imported without reading them: each such weight becomes
a resource over the file's bytes, mapped (`system/reading.map_region`), so a model of many
gigabytes opens in the memory its graph needs. An importer failure is a LensError at the node
it was importing.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any

import onnx
from torch_mlir import ir
from torch_mlir.extras import onnx_importer

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.system import reading
from torch_mlir_lens.worker.onnx import model_file
from torch_mlir_lens.worker.onnx.nodes import NodeKeys


@dataclass
class Imported:
    """A model imported: the module (ONNX ops as `torch.operator "onnx.*"`) and its nodes."""

    module: Any  # the module operation
    keys: NodeKeys
    model: onnx.ModelProto  # the model as imported (shapes inferred, nodes keyed)


class _MappedWeights(onnx_importer.ContextCache):
    """The importer's type and constant cache, reading external weights by mapping them."""

    __slots__ = ("_model_path",)

    def __init__(self, context: ir.Context, model_path: str) -> None:
        super().__init__(context)
        self._model_path = model_path

    def tensor_proto_to_attr(self, tp: onnx.TensorProto) -> ir.Attribute:
        if tp.data_location != onnx.TensorProto.EXTERNAL:
            return super().tensor_proto_to_attr(tp)
        offset, length = model_file.region(tp)
        try:
            data = reading.map_region(model_file.external_path(self._model_path, tp), offset,
                                      length)
        except OSError as exc:
            raise LensError(ErrorKind.LOAD_ERROR, f"the weight {tp.name!r}: {exc}",
                            file=self._model_path) from None
        return ir.DenseResourceElementsAttr.get_from_buffer(
            data, self._sanitize_name(tp.name), self.tensor_proto_to_builtin_type(tp),
            alignment=8)


class _NodeImporter(onnx_importer.NodeImporter):
    """The importer, remembering the node it imports (its failures name the node)."""

    __slots__ = ()
    current: onnx.NodeProto | None = None

    def import_node(self, node: onnx.NodeProto) -> None:
        _NodeImporter.current = node
        super().import_node(node)


def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with the shapes ONNX's inference finds (data propagated); the model as it is
    when inference fails (the importer then works with the types the file declares)."""
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # onnx raises several kinds (InferenceError, ValidationError, ...)
        return model


def import_model(model: onnx.ModelProto, path: str, ctx: ir.Context) -> Imported:
    """The model imported into `ctx` (module docstring); `model` is not changed."""
    work = infer_shapes(copy.deepcopy(model))
    keys = NodeKeys.assign(work)
    config = onnx_importer.Config()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "a node without a valid type proto": it shows
            info = onnx_importer.ModelInfo(work, config=config)
            module_op = info.create_module(context=ctx).operation
            imp = onnx_importer.NodeImporter.define_function(
                info.main_graph, module_op, context_cache=_MappedWeights(ctx, path))
            imp.__class__ = _NodeImporter
            _NodeImporter.current = None
            imp.import_all()
    except LensError:
        raise
    except Exception as exc:
        raise _import_error(exc, keys, path) from None
    finally:
        _NodeImporter.current = None
    keys.stamp(module_op, path)
    return Imported(module_op, keys, work)


def _import_error(exc: Exception, keys: NodeKeys, path: str) -> LensError:
    """The importer's failure at the node it was importing (the graph when none)."""
    node = _NodeImporter.current
    index = keys.owner.get(node.name) if node is not None else None
    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    where = keys.nodes[index - 1].label() if index else "the graph"
    return LensError(ErrorKind.EXPORT_ERROR,
                     f"torch-mlir's ONNX importer refused {where}: {detail}",
                     file=path, line=index)

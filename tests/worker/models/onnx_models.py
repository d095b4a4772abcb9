"""Small ONNX models for the tests: the onnx wheel's own test models, and tiny graphs built here.

Nothing is downloaded: `onnx/backend/test/data/` ships with the `onnx` package.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DATA = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data"
RELU = DATA / "simple" / "test_single_relu_model" / "model.onnx"  # opset 9, test data beside
SQUEEZENET = DATA / "light" / "light_squeezenet.onnx"  # opset 9: MaxPool, Concat unconverted
IR_VERSION = 10  # what onnxruntime 1.31 reads (onnx 1.23 writes newer by default)


def save(model: onnx.ModelProto, path: Path) -> Path:
    model.ir_version = IR_VERSION
    onnx.save(model, str(path))
    return path


def chain(tmp: Path, op: str, *, domain: str = "", opset: int = 17,
          name: str = "chain") -> Path:
    """x → Relu → `op` (named "last") → Relu → y, on a 2x3 float input."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first"),
             helper.make_node(op, ["r"], ["s"], name="last", domain=domain),
             helper.make_node("Relu", ["s"], ["y"])]
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(helper.make_graph(nodes, name, [x], [y]), opset_imports=opsets)
    return save(model, tmp / f"{name}.onnx")


def dynamic_add(tmp: Path, *, external: bool = False) -> Path:
    """y = x + w, x of shape [batch, 4] (`batch` a dim_param), w = [0, 1, 2, 3]; with
    `external`, w in an external data file `add.bin` beside the model."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")], "add",
                              [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = IR_VERSION
    path = tmp / "add.onnx"
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, location="add.bin",
                        size_threshold=0)
    else:
        onnx.save(model, str(path))
    return path

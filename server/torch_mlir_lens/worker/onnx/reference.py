"""What an ONNX model is checked against: its inputs, and onnxruntime's answer on them.

    model_inputs(model, path, dims) → Inputs (arrays in graph order, where they came from)
    Reference(model, path)(*tensors) → onnxruntime's outputs as torch tensors (else the onnx
                                       package's reference evaluator's: `name` says which)

Inputs are the test data beside the model when there is some (`test_data_set_0/input_*.pb`
in the model's folder, as the onnx wheel's test models and the ONNX model zoo keep it), read
through `system/reading.py`; else generated from the declared types, seeded: floats from a
normal distribution, integers in [0, 4) (they are often indices), booleans. A dynamic dim
(`dim_param`) gets the size the user set for its name (`ModuleJob.dims`), else 1; a dim with
neither size nor name gets 1.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.system import reading
from torch_mlir_lens.system.reading import read_bytes

SEED = 0


@dataclass
class Inputs:
    """A model's inputs, in the order of its graph's (non-weight) inputs."""

    arrays: list[np.ndarray]
    source: str  # "test data (test_data_set_0)" or "generated"


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs that are not weights (an initializer of the same name)."""
    weights = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in weights]


def dynamic_dims(model: onnx.ModelProto) -> list[str]:
    """The names of the inputs' dynamic dims, in order, each once."""
    names: list[str] = []
    for info in graph_inputs(model):
        for d in info.type.tensor_type.shape.dim:
            if not d.HasField("dim_value") and d.dim_param and d.dim_param not in names:
                names.append(d.dim_param)
    return names


def shape_of(info: onnx.ValueInfoProto, dims: dict[str, int]) -> list[int]:
    """An input's shape, its dynamic dims at their chosen sizes (1 unless set)."""
    shape = []
    for d in info.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            shape.append(int(d.dim_value))
        else:
            shape.append(int(dims.get(d.dim_param, 1)) if d.dim_param else 1)
    return shape


def _test_data(path: str, count: int) -> tuple[list[np.ndarray], str] | None:
    folder = os.path.dirname(os.path.abspath(path))
    for data_set in sorted(glob.glob(os.path.join(folder, "test_data_set_*"))):
        files = [os.path.join(data_set, f"input_{i}.pb") for i in range(count)]
        if count and all(os.path.isfile(f) for f in files):
            arrays = []
            for file in files:
                tensor = onnx.TensorProto()
                try:
                    tensor.ParseFromString(read_bytes(file, reading.ONNX_TENSOR))
                    arrays.append(numpy_helper.to_array(tensor))
                except Exception as exc:
                    raise LensError(ErrorKind.BAD_INPUTS, f"cannot read the test input "
                                    f"{os.path.relpath(file, folder)}: {exc}", file=path) from None
            return arrays, f"test data ({os.path.basename(data_set)})"
    return None


def _generated(info: onnx.ValueInfoProto, dims: dict[str, int],
               rng: np.random.Generator, path: str) -> np.ndarray:
    tensor_type = info.type.tensor_type
    if not info.type.HasField("tensor_type"):
        raise LensError(ErrorKind.BAD_INPUTS, f"the input {info.name!r} is not a tensor "
                        f"({info.type.WhichOneof('value')}): give test data beside the model "
                        "(test_data_set_0/input_0.pb, ...)", file=path)
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
    shape = shape_of(info, dims)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 4, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    raise LensError(ErrorKind.BAD_INPUTS, f"the input {info.name!r} is of type {dtype}, which "
                    "Verify does not generate: give test data beside the model", file=path)


def model_inputs(model: onnx.ModelProto, path: str, dims: dict[str, int]) -> Inputs:
    """The model's inputs (module docstring)."""
    infos = graph_inputs(model)
    found = _test_data(path, len(infos))
    if found is not None:
        return Inputs(found[0], found[1])
    rng = np.random.default_rng(SEED)
    return Inputs([_generated(i, dims, rng, path) for i in infos], "generated")


ONNXRUNTIME = "onnxruntime"
EVALUATOR = "onnx's reference evaluator"


class Reference:
    """What the model computes, as the file has it: onnxruntime (CPU, every graph optimisation
    off: it computes what the nodes say), or, for a model onnxruntime has no kernel for (the
    opset-6 `Gemm`, `PRelu` and `AveragePool` of the onnx wheel's older test models), the
    `onnx` package's own reference evaluator, which implements every opset in numpy. `name`
    says which, for Verify's words."""

    def __init__(self, model: onnx.ModelProto, path: str) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise LensError(ErrorKind.VERIFY_ERROR, "Verify of an ONNX model needs "
                            "onnxruntime: pip install 'torch-mlir-lens[onnx]'") from exc
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3
        self.names = [i.name for i in graph_inputs(model)]
        self.name = ONNXRUNTIME
        self.evaluator: Any = None
        try:
            if any(t.data_location == onnx.TensorProto.EXTERNAL
                   for t in model.graph.initializer):
                # Its weights are in files beside it: onnxruntime reads them from its folder.
                self.session = ort.InferenceSession(path, options,
                                                    providers=["CPUExecutionProvider"])
            else:
                self.session = ort.InferenceSession(model.SerializeToString(), options,
                                                    providers=["CPUExecutionProvider"])
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            self.evaluator = _evaluator(model)
            if self.evaluator is None:
                raise LensError(ErrorKind.VERIFY_ERROR,
                                f"onnxruntime cannot run the model: {first}",
                                file=path) from None
            self.name = EVALUATOR

    def run(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The reference's outputs on `arrays` (graph input order)."""
        feeds = dict(zip(self.names, arrays, strict=True))
        runner = self.evaluator if self.evaluator is not None else self.session
        outputs = runner.run(None, feeds)
        return [np.asarray(o) for o in outputs]

    def __call__(self, *tensors: Any) -> tuple[Any, ...]:
        """As eager PyTorch is called by Verify: torch tensors in, torch tensors out."""
        import torch

        outputs = self.run([t.detach().cpu().numpy() for t in tensors])
        return tuple(torch.from_numpy(np.ascontiguousarray(o)) for o in outputs)


def _evaluator(model: onnx.ModelProto) -> Any:
    """The onnx package's reference evaluator of `model`, or None when it cannot take it
    either (an operator of a domain it does not know)."""
    try:
        from onnx.reference import ReferenceEvaluator

        return ReferenceEvaluator(model)
    except Exception:  # its refusal: onnxruntime's stands
        return None

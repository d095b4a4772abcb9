"""ONNX models in the repository check: an `.onnx` file is one module, its graph.

- Planned without `onnx` (`source/onnx_header.py`: the graph's name from the file's bytes), as
  `model.onnx::<graph>` in `--list`, shards and reports; a file that is no ONNX model is a file
  problem (exit 2), as a Python file that does not parse.
- Lowered as `lower model.onnx` lowers it: the job names the file's one graph and carries no
  text (the engine keys it by the model's digest), with the run's dynamic dims (`--dim`). Of
  the run's rewrites a model takes the ONNX fixes (`opset`, `shapes`, `fold`) and `auto`, a
  Python module the others: each is a way past that only one of them has.
- Its findings are at nodes (`Finding.node`): `model.onnx: node N "name" (Op, opset K)` in text
  and annotations, a logical location in SARIF; no rewrite is proven for them (the worker has
  no `rewrites` job for a model): the opset fix the lowering proves is in the finding's words,
  and `--rewrites auto` lowers through every proven fix (`tosa ok (through rewrites opset)`).
"""

from __future__ import annotations

from collections.abc import Iterable

from torch_mlir_lens.rules.onnx_nodes import FIXES
from torch_mlir_lens.rules.rewrite_specs import AUTO
from torch_mlir_lens.source.onnx_files import THE_GRAPH, is_onnx

INPUTS = "model"  # a task's `inputs`: the model declares its inputs (their dims, `--dim`)


def is_model(path: str) -> bool:
    """Whether a file of the run is an ONNX model."""
    return is_onnx(path)


def job_module(path: str, name: str) -> str:
    """The module a job names: a model's one graph, whatever its name; a Python module's."""
    return THE_GRAPH if is_model(path) else name


def rewrites_for(path: str, items: Iterable[str]) -> tuple[str, ...]:
    """The run's rewrite items (`erfinv@tosa`, `opset`, `auto`) that the file's modules lower
    through: an ONNX model's fixes (and `auto`) for a model, the others for a Python module."""
    model = is_model(path)

    def name(item: str) -> str:
        return item.partition("@")[0].strip()

    return tuple(i for i in items if name(i) == AUTO or (name(i) in FIXES) == model)


__all__ = ["INPUTS", "is_model", "job_module", "rewrites_for"]

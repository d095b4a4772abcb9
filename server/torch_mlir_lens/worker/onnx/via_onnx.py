"""A PyTorch module lowered "via ONNX": `torch.onnx.export(..., dynamo=True)`, then torch-mlir's
ONNX importer and pipelines, beside the FX path (torch.export → the FX importer).

    lower_via_onnx(job, fn, args, kwargs, user_files, options) → {"results": [...]}

Many teams take this road (their model ships as `.onnx`); the two paths can differ per backend
(an op the FX path decomposes one way becomes ONNX nodes torch-mlir converts another way), and
`lower --via onnx` shows where. The exporter records each node's Python stack trace
(`pkg.torch.onnx.stack_trace`): every op, culprit and map entry is placed at the user's line
that made its node, the node itself kept in `LensDiagnostic.node`.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from typing import Any

from torch_mlir_lens.protocol.jobs import LowerJob
from torch_mlir_lens.protocol.results import ErrorKind, IrLineMapping, LensError, LowerResult
from torch_mlir_lens.worker.ir.locations import UserFiles
from torch_mlir_lens.worker.lowering.options import LowerOptions
from torch_mlir_lens.worker.onnx.lowerer import OnnxLowerer

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
STACK_KEY = "pkg.torch.onnx.stack_trace"
SUFFIX = ".via.onnx"  # the model's stand-in path (never written): node N at its "line" N


def export_onnx(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The module as `torch.onnx.export(..., dynamo=True)` makes it (a ModelProto)."""
    try:
        import onnxscript  # noqa: F401  (the exporter's own dependency: say it plainly)
        import torch
    except ImportError as exc:
        raise LensError(ErrorKind.BAD_REQUEST, "lowering via ONNX needs onnx and onnxscript: "
                        "pip install 'torch-mlir-lens[onnx]'") from exc
    chatter = io.StringIO()
    try:
        with contextlib.redirect_stdout(chatter):
            program = torch.onnx.export(fn, tuple(args), kwargs=kwargs or None, dynamo=True,
                                        verbose=False)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise LensError(ErrorKind.EXPORT_ERROR,
                        f"torch.onnx.export refused the module: {first}") from None
    if program is None:
        raise LensError(ErrorKind.EXPORT_ERROR, "torch.onnx.export made no model")
    return program.model_proto


def node_lines(model: Any, users: UserFiles) -> dict[int, tuple[str, int]]:
    """Node index (1-based) → the innermost user frame of its recorded stack trace."""
    lines: dict[int, tuple[str, int]] = {}
    for index, node in enumerate(model.graph.node, start=1):
        trace = next((p.value for p in node.metadata_props if p.key == STACK_KEY), "")
        frames = [(f, int(n)) for f, n in _FRAME.findall(trace) if f in users]
        if frames:
            lines[index] = frames[-1]  # the trace is outermost first
    return lines


def _placed(result: LowerResult, stand_in: str, lines: dict[int, tuple[str, int]],
            path: str) -> LowerResult:
    """The result's node positions replaced by the user's lines."""
    placed: list[IrLineMapping] = []
    for m in result.map:
        if m.file != stand_in:
            placed.append(m)
        elif m.line in lines:
            file, line = lines[m.line]
            placed.append(IrLineMapping(m.ir_line, file, line, m.depth))
    result.map = placed
    for d in result.diagnostics:
        if d.file == stand_in:
            d.file, d.line = lines.get(d.line or 0, (path, None))
    result.stats = {**result.stats, "via": "onnx"}
    return result


def lower_via_onnx(job: LowerJob, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                   user_files: list[str], options: LowerOptions) -> dict[str, Any]:
    """Each target of `job` lowered via ONNX (module docstring)."""
    model = export_onnx(fn, args, kwargs)
    stand_in = os.path.abspath(job.path) + SUFFIX
    lowerer = OnnxLowerer(model, path=stand_in, module_name=job.module)
    lines = node_lines(model, UserFiles(user_files or [job.path]))
    targets: list[tuple[str, str | None]] = [(t, None) for t in job.targets]
    if job.pipeline and job.pipeline.strip():
        targets.append(("custom", job.pipeline))
    results = []
    for target, pipeline in targets:
        if target == "fx":
            raise LensError(ErrorKind.BAD_REQUEST, "via ONNX there is no FX graph: the "
                            "first target is `raw` (the exported model as imported)")
        result = lowerer.lower(target, pipeline=pipeline, options=options)
        results.append(_placed(result, stand_in, lines, job.path).to_json(compact_map=True))
    return {"results": results}

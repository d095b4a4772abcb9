"""`torchMlirLens/onnxModel`: an `.onnx` file as the client's model view shows it (VS Code's
read-only custom editor): its graph, opsets, inputs and outputs, and every node with the
types of its values and its verdict per backend; its diagnostics published to the file.

One lowering of the model (the worker's ONNX path: read and checked, weights mapped, never
loaded, so a model with gigabytes of external data opens as fast as its graph) at the imported
IR (`raw`: the values' types), Torch and each backend; the IR panes then answer from the
engine's cache (`torchMlirLens/lower` with the answer's `module`). A model has no lines: its
findings sit at their nodes, node N at line N (1-based, as results locate them), a problem of
the whole model at line 1 (`finding_records.model_records`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pygls.exceptions import JsonRpcInvalidParams

from torch_mlir_lens.findings import onnx_verdicts
from torch_mlir_lens.lsp.checks import finding_records
from torch_mlir_lens.lsp.checks.publish import publish_model
from torch_mlir_lens.lsp.document import Document, load_document
from torch_mlir_lens.lsp.state.trust import UNTRUSTED
from torch_mlir_lens.lsp.wire import convert
from torch_mlir_lens.lsp.wire.request_io import lens_error
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.onnx_graphs import OnnxGraph, OnnxValue
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.rules.targets import BACKENDS
from torch_mlir_lens.source.onnx_files import THE_GRAPH, is_onnx

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

ONNX_MODEL = lens_types.ONNX_MODEL
SHOWN = ("raw", "torch")  # the imported IR (its values' types) and Torch, besides backends


async def onnx_model(session: Session,
                     params: lens_types.OnnxModelParams) -> lens_types.OnnxModelResponse:
    """The model's graph with each node's verdict per backend; its diagnostics published."""
    if not is_onnx(params.uri) or convert.uri_to_path(params.uri) is None:
        raise JsonRpcInvalidParams(f"not an .onnx file: {params.uri}")
    try:
        doc = load_document(session.store, params.uri)
    except OSError as exc:
        raise JsonRpcInvalidParams(f"cannot read {params.uri}: {exc}") from exc
    backends = _backends(session, doc, params.targets)
    try:
        results = await session.host.lower(doc, THE_GRAPH, [*SHOWN, *backends],
                                           cancel_on_abandon=True)
    except LensError as err:
        if err.kind == ErrorKind.CANCELLED:
            raise lens_error(err) from None
        if err.kind != UNTRUSTED:  # a verdict on the model: in Problems too
            publish_model(session, doc,
                          finding_records.model_error_records(doc, THE_GRAPH, err))
        return _failed(params.uri, err)
    by_target = {r.target: r for r in results}
    graph = next((r.onnx for r in results if r.onnx is not None), None) or OnnxGraph("")
    diagnosed = [t for t in backends if t in session.settings_for(doc.path).diagnostic_targets]
    publish_model(session, doc, finding_records.model_records(
        doc, graph.graph or THE_GRAPH, [by_target[t] for t in backends if t in by_target],
        diagnosed or backends))
    return _answer(params.uri, doc.path or "", graph, by_target, backends)


def _backends(session: Session, doc: Document, wanted: list[str] | None) -> list[str]:
    """The backends to judge the nodes at: those asked for, else the diagnosed ones (an ONNX
    model has no IREE targets yet), else all three."""
    names = wanted if wanted is not None else \
        list(session.settings_for(doc.path).diagnostic_targets)
    unknown = [t for t in wanted or [] if t not in BACKENDS]
    if unknown:
        raise JsonRpcInvalidParams(f"not a backend: {', '.join(unknown)} (choose from "
                                   f"{', '.join(BACKENDS)})")
    return [t for t in BACKENDS if t in names] or list(BACKENDS)


def _value(value: OnnxValue) -> lens_types.OnnxValueInfo:
    return lens_types.OnnxValueInfo(name=value.name, dtype=value.dtype, dims=list(value.dims))


def _answer(uri: str, path: str, graph: OnnxGraph, results: dict[str, LowerResult],
            backends: list[str]) -> lens_types.OnnxModelResponse:
    rows = onnx_verdicts.rows(graph, results, path, backends, raw=results.get("raw"))
    error = None
    if not graph.nodes:  # the model did not import: say why, as its first result does
        first = next(iter(results.values()), None)
        diag = next((d for d in first.diagnostics if d.severity == "error"), None) \
            if first is not None else None
        if diag is not None:
            error = lens_types.LowerError(kind=str(diag.kind), message=diag.message, uri=uri,
                                          line=diag.line)
    return lens_types.OnnxModelResponse(
        uri=uri, module=graph.graph or THE_GRAPH, graph=graph.graph, opsets=dict(graph.opsets),
        inputs=[_value(v) for v in graph.inputs], outputs=[_value(v) for v in graph.outputs],
        nodes=[lens_types.OnnxNodeRow(
            index=r.node.index, name=r.node.name, op_type=r.node.op_type,
            domain=r.node.domain, opset=r.node.opset, inputs=r.inputs, outputs=r.outputs,
            verdicts=[lens_types.OnnxNodeVerdict(
                target=v.target, state=v.state, why=v.why)  # type: ignore[arg-type]
                for v in r.verdicts]) for r in rows],
        targets=[lens_types.OnnxTargetSummary(target=s.target, ok=s.ok, partial=s.partial,
                                              rejected=s.rejected, message=s.message)
                 for s in onnx_verdicts.summaries(results, path, backends)],
        fixes=list(graph.fixes), error=error)


def _failed(uri: str, err: LensError) -> lens_types.OnnxModelResponse:
    """The answer for a model that could not be read or imported at all."""
    return lens_types.OnnxModelResponse(
        uri=uri, module=THE_GRAPH, graph="", opsets={}, inputs=[], outputs=[], nodes=[],
        targets=[], fixes=[], error=lens_types.LowerError(kind=err.kind, message=err.message,
                                                          uri=uri, line=err.line))

"""`torchMlirLens/graph`: a module's graph with each node's verdict per backend, for the
client's graph view (the worker's `graph` job, protocol/graph.py); a module that does not
export answers a JSON-RPC error the view shows. When Verify has run on the module's current
text (the Verify lens), its verdict and the first diverging line's mismatch are on the graph
and its nodes (findings/graph_verify.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch_mlir_lens.findings.graph_verify import mark_verify
from torch_mlir_lens.lsp.checks.requested_module import document_and_module, module_job
from torch_mlir_lens.lsp.wire.request_io import lens_error
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.graph import ModuleGraph
from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.rules.targets import BACKENDS

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

GRAPH = lens_types.GRAPH


async def graph(session: Session, params: lens_types.GraphParams) -> lens_types.GraphResponse:
    """The graph of `params.module` of the document's current text."""
    doc, _info, module = document_and_module(session, params.uri, params.module)
    job = module_job(session, doc, module)
    wanted = params.targets or list(session.settings.diagnostic_targets) or list(BACKENDS)
    targets = [t for t in wanted if t in BACKENDS] or list(BACKENDS)
    try:
        answer = await session.host.call(f"building the graph of {module}",
                                         lambda engine: engine.graph(job, targets))
    except LensError as err:
        raise lens_error(err) from None
    verified = doc.verify_result(module)
    if verified is not None:
        marked = ModuleGraph.from_json(answer)
        mark_verify(marked, verified)
        answer = marked.to_json()
    return lens_types.GraphResponse(graph=answer)

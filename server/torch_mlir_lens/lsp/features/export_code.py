"""`torchMlirLens.exportCode`: Python that reproduces a module's IR with plain torch-mlir, the
rewrites it lowers through inlined as functions (worker/rewrites/snippet.py). The client puts
it on the clipboard ("Copy Export Code"): code the user owns, importing nothing of this
product."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch_mlir_lens.lsp.checks.requested_module import document_and_module, module_job
from torch_mlir_lens.lsp.wire.request_io import lens_error, single_arg
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.results import LensError

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session


async def export_code(session: Session, *args: Any) -> lens_types.ExportCodeResponse:
    """`torchMlirLens.exportCode`: the Python that reproduces a module's IR."""
    return await code_of(session, single_arg(session.client, args, lens_types.ExportCodeArgs))


async def code_of(session: Session,
                  args: lens_types.ExportCodeArgs) -> lens_types.ExportCodeResponse:
    """The export code of the module at `args.target` (default: the default target)."""
    doc, _info, module = document_and_module(session, args.uri, args.module)
    job = module_job(session, doc, module)
    target = args.target or session.settings.default_target

    try:
        answer = await session.host.call(f"writing the export code of {module}",
                                        lambda engine: engine.export_code(job, target))
    except LensError as err:
        raise lens_error(err) from None
    return lens_types.ExportCodeResponse(code=str(answer.get("code") or ""),
                                         rewrites=[str(r) for r in answer.get("rewrites") or []])

"""Verify: the module's LLVM lowering run and compared with eager PyTorch (worker `verify`),
its verdict recorded on the document and shown (the Verify lens and, when it differs or
fails, diagnostics: `verify_view.py`). The command and the custom request both run it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.checks import verify_view
from torch_mlir_lens.lsp.checks.publish import publish
from torch_mlir_lens.lsp.checks.requested_module import document_and_module, module_job
from torch_mlir_lens.lsp.document import Document, Stamp
from torch_mlir_lens.lsp.wire import answers, convert
from torch_mlir_lens.lsp.wire.request_io import lens_error
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.results import ErrorKind, LensError
from torch_mlir_lens.protocol.verify_results import VerifyResult

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session


async def verify(session: Session,
                 args: lens_types.VerifyParams) -> lens_types.VerifyResponse:
    """Run the module's LLVM lowering and compare it with eager PyTorch (worker `verify`).

    The verdict also shows in the editor: the module's Verify lens and, when it differs or
    fails, diagnostics on the class and at the first diverging line (`verify_view`).
    """
    doc, info, module = document_and_module(session, args.uri, args.module)
    job = module_job(session, doc, module)
    target = args.target or "linalg"
    stamp = doc.stamp()
    try:
        # Another backend's own IR is run when asked (an IREE target's compiled module on
        # IREE's runtime); Linalg's by default.
        result: VerifyResult = await session.host.call(
            f"verifying {module}", lambda engine: engine.verify(
                job, rtol=args.rtol, atol=args.atol, target=target), target=target)
    except LensError as err:
        if err.kind != ErrorKind.CANCELLED:
            _show_verify(session, doc, info, module, stamp, VerifyResult(
                module=module, ok=False, kind=err.kind, message=f"✗ {err.message}",
                diagnostics=[err.to_diagnostic("llvm")]), target)
        raise lens_error(err) from None
    _show_verify(session, doc, info, module, stamp, result, target)
    return answers.verify_response(result)


def _show_verify(
    session: Session,
    doc: Document,
    info: discovery.ModuleInfo | None,
    module: str,
    stamp: Stamp,
    result: VerifyResult,
    target: str,
) -> None:
    """Record a Verify result on the (open, unchanged) document: lens and diagnostics."""
    lines = doc.lines
    if info is not None:
        rng = convert.name_range(lines, info.line, info.name_col, info.name_end_col, info.name)
    else:
        rng = convert.line_range(lines, 1)
    records = verify_view.verify_records(lines, doc.path, module, rng, result,
                                         info.line if info is not None else None)
    if not doc.record_verify(stamp, module, result, records, target):
        return  # closed or edited meanwhile: the verdict is of another text
    publish(session, doc)
    session.refresh_lenses()

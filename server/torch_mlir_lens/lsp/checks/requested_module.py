"""The document and module a command or request names, and its engine job: refused with a
JSON-RPC error the client can show (an empty name, an unreadable file, a job that cannot be
made), never a traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pygls.exceptions import JsonRpcInvalidParams

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.document import Document, load_document
from torch_mlir_lens.lsp.wire.request_io import lens_error
from torch_mlir_lens.protocol.results import LensError

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session
    from torch_mlir_lens.protocol.jobs import ModuleJob


def document_and_module(
    session: Session, uri: str, module: str
) -> tuple[Document, discovery.ModuleInfo | None, str]:
    """The document, the module's static info (None if not found) and the module name."""
    if not module:
        raise JsonRpcInvalidParams("`module` must not be empty")
    try:
        doc = load_document(session.store, uri)
    except OSError as exc:
        raise JsonRpcInvalidParams(f"cannot read {uri}: {exc}") from exc
    modules = session.modules_of(doc)
    info = next((m for m in modules if m.name == module), None)
    return doc, info, module


def module_job(session: Session, doc: Document, module: str) -> ModuleJob:
    """The engine job of `module` of the document's current text (a request's error if none)."""
    try:
        return session.host.job(doc, module)
    except LensError as err:
        raise lens_error(err) from None

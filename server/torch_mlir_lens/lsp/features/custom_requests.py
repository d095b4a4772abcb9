"""Custom requests for the client's IR panes; their types are `protocol.lsp`.

The params arrive structured by the converter (`lsp/wire/json_rpc.py`); a lowering superseded by a
newer text answers the LSP error ContentModified.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.checks import cell_positions, staging, verify_run
from torch_mlir_lens.lsp.document import Document, load_document
from torch_mlir_lens.lsp.wire import answers, convert
from torch_mlir_lens.lsp.wire.request_io import lens_error
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.jobs import VIAS
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.rules.targets import CUSTOM_TARGET, TARGETS

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)

LOWER = lens_types.LOWER
MODULES = lens_types.MODULES
VERIFY = lens_types.VERIFY


async def lower(session: Session, params: lens_types.LowerParams) -> lens_types.LowerResponse:
    """`torchMlirLens/lower`: a module's IR at a target, with its line map."""
    return await lower_request(session, params)


def modules(session: Session, params: lens_types.ModulesParams) -> lens_types.ModulesResponse:
    """`torchMlirLens/modules`: the document's modules (static: works untrusted)."""
    doc = _document(session, params.uri)
    return lens_types.ModulesResponse(modules=module_infos(session, doc))


async def verify(session: Session, params: lens_types.VerifyParams) -> lens_types.VerifyResponse:
    """`torchMlirLens/verify`: Verify as a request."""
    return await verify_run.verify(session, params)


def _document(session: Session, uri: str) -> Document:
    try:
        return load_document(session.store, uri)
    except OSError as exc:
        raise JsonRpcInvalidParams(f"cannot read {uri}: {exc}") from exc


def module_infos(session: Session, doc: Document) -> list[lens_types.ModuleInfo]:
    """The document's modules with their ranges and input status."""
    lines = doc.lines
    out = []
    for info in session.modules_of(doc):
        start = (info.decorator_line or info.line) - 1
        out.append(lens_types.ModuleInfo(
            name=info.name,
            kind=info.kind,  # type: ignore[arg-type]  # discovery's "class" | "function"
            range=_block_range(lines, start, info.end_line - 1),
            selection_range=convert.name_range(
                lines, info.line, info.name_col, info.name_end_col, info.name
            ),
            forward_range=(
                _block_range(lines, info.forward_line - 1, info.forward_end_line - 1)
                if info.forward_line and info.forward_end_line else None
            ),
            inputs=info.inputs,  # type: ignore[arg-type]  # discovery's input statuses
            parents=list(info.parent_candidates),
        ))
    return out


def _block_range(lines: list[str], first: int, last: int) -> types.Range:
    last_text = lines[last] if 0 <= last < len(lines) else ""
    return types.Range(
        start=types.Position(line=max(first, 0), character=0),
        end=types.Position(line=max(last, 0), character=len(last_text)),
    )


def _module_name(session: Session, doc: Document, params: lens_types.LowerParams) -> str:
    if params.module:
        return params.module
    if params.position is not None:
        modules = session.modules_of(doc)
        line = params.position.line
        _doc, cell = cell_positions.resolve(session, params.uri)
        if cell is not None:  # a notebook cell's line
            line = cell_positions.program_line(cell, line)
        info = discovery.module_at_line(modules, line + 1)
        if info is not None:
            return info.name
        raise JsonRpcInvalidParams("no module at that position")
    raise JsonRpcInvalidParams("`module` or `position` is required")


def _pipeline(session: Session, pipeline: str | None) -> str | None:
    if not pipeline:
        return None
    if pipeline in session.settings.pipelines:
        return session.settings.pipelines[pipeline]
    if "(" in pipeline:
        return pipeline  # a literal pass pipeline
    names = ", ".join(sorted(session.settings.pipelines)) or "none configured"
    raise JsonRpcInvalidParams(f"unknown pipeline {pipeline!r} (named pipelines: {names})")


async def lower_request(session: Session,
                        params: lens_types.LowerParams) -> lens_types.LowerResponse:
    """Answer `torchMlirLens/lower` (`protocol.lsp.LowerResponse`; `lsp/wire/answers.py`)."""
    doc = _document(session, params.uri)
    module = _module_name(session, doc, params)
    pipeline = _pipeline(session, params.pipeline)
    target = params.target or session.settings.default_target
    if pipeline is None and target not in TARGETS:
        raise JsonRpcInvalidParams(f"unknown target {target!r}")
    print_after_all = params.print_after_all
    token = params.work_done_token
    inline = params.inline_blocks  # a pane's own choice; the setting's needs no override
    if inline is not None and inline == (not session.settings.stitch_blocks):
        inline = None
    via = params.via or "fx"
    if via not in VIAS:
        raise JsonRpcInvalidParams(f"unknown path {via!r} (choose from {', '.join(VIAS)})")
    try:
        result = await _lower(session, doc, module, target, pipeline, print_after_all, token,
                              inline, via)
    except LensError as err:
        if err.kind == ErrorKind.CANCELLED:
            raise lens_error(err) from None
        return cell_positions.relocate_lower(
            doc, answers.lower_error(module, CUSTOM_TARGET if pipeline else target, err))
    return cell_positions.relocate_lower(doc, answers.lower_response(result))


async def _lower(
    session: Session,
    doc: Document,
    module: str,
    target: str,
    pipeline: str | None,
    print_after_all: bool,
    token: Any,
    inline_blocks: bool | None = None,
    via: str = "fx",
) -> LowerResult:
    plain = pipeline is None and not print_after_all and inline_blocks is None and via == "fx"
    if plain and target in session.settings_for(doc.path).check_targets:
        # The check's first stage for this target alone (shared with hover and diagnostics,
        # cached on the document); the other check targets follow without delaying it.
        results = await staging.check_target(session, doc, module, target,
                                             progress_token=token, progress=True,
                                             cancel_on_abandon=True)
        if target in results:
            return results[target]
    cached = doc.result(module, target) if plain else None
    if cached is not None:
        return cached
    stamp = doc.stamp()
    results_list = await session.host.lower(
        doc, module, [] if pipeline else [target], pipeline=pipeline,
        print_after_all=print_after_all, progress_token=token, progress=True,
        inline_blocks=inline_blocks, via=via,
    )
    if not results_list:
        raise LensError(ErrorKind.LOWERING_ERROR, "the engine returned no result")
    result = results_list[-1]
    if plain:  # another target than the check's (e.g. `torch`): no verdict of its own
        doc.record_results(stamp, module, [result], verdicts=False)
    return result

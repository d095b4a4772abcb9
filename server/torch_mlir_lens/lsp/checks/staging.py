"""A module's check, in two stages, recorded on its document.

Stage 1 lowers the default target alone: hover, lenses and `torchMlirLens/lower` answer from
it at once. Stage 2 lowers the other check targets (the diagnosed backends) as a second engine
job on the worker's cached exported program, in the background unless the caller waits for
the whole check (diagnostics do: they publish a module once every backend is known, no
per-backend flicker). Hover, lenses, diagnostics and `torchMlirLens/lower` all read these
results, so a module is exported once per text whichever feature asks first.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from torch_mlir_lens.lsp.document import Document
from torch_mlir_lens.lsp.state.trust import UNTRUSTED
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)

# Failures that say nothing about the module: not recorded as its check's outcome, nor
# published as its diagnostics.
NOT_A_VERDICT = frozenset({ErrorKind.CANCELLED, UNTRUSTED})


async def check(
    session: Session,
    doc: Document,
    module: str,
    *,
    progress_token: types.ProgressToken | None = None,
    progress: bool = False,
    cancel_on_abandon: bool = False,
) -> dict[str, LowerResult]:
    """The whole check of a module (default target + diagnosed backends): both stages
    awaited in turn. Returns every result known, by target."""
    kwargs: dict[str, Any] = dict(progress_token=progress_token, progress=progress,
                                  cancel_on_abandon=cancel_on_abandon)
    known = await check_target(session, doc, module, follow_up=False, **kwargs)
    rest = missing(session, doc, module)
    if rest:
        known.update(await _stage(session, doc, module, rest, **kwargs))
    return known


async def check_target(
    session: Session,
    doc: Document,
    module: str,
    target: str | None = None,
    *,
    progress_token: types.ProgressToken | None = None,
    progress: bool = False,
    cancel_on_abandon: bool = False,
    follow_up: bool = True,
) -> dict[str, LowerResult]:
    """Stage 1: lower only `target` (default: the default target), then stage 2 in the
    background (unless `follow_up` is False). Returns every result known, by target.

    A check nobody waits for any more still finishes by default (a hover the mouse left must
    not kill and restart the worker); `torchMlirLens/lower` passes `cancel_on_abandon=True`.
    """
    target = target or session.settings.default_target
    if doc.result(module, target) is None:
        await _stage(session, doc, module, [target], progress_token=progress_token,
                     progress=progress, cancel_on_abandon=cancel_on_abandon)
    if follow_up:
        _follow_up(session, doc, module)
    return known(session, doc, module)


def known(session: Session, doc: Document, module: str) -> dict[str, LowerResult]:
    """The check results of `module` recorded on the document, by target."""
    out = {}
    for target in session.settings_for(doc.path).check_targets:
        result = doc.result(module, target)
        if result is not None:
            out[target] = result
    return out


def missing(session: Session, doc: Document, module: str) -> list[str]:
    """The check targets of `module` not known yet (in check order)."""
    return [t for t in session.settings_for(doc.path).check_targets
            if doc.result(module, t) is None]


def _follow_up(session: Session, doc: Document, module: str) -> None:
    """Stage 2 in the background: the check targets still missing, then lens verdicts.

    Identical follow-ups of one text share one flight in the engine; a newer text
    supersedes it there like any lowering of the old text.
    """
    rest = missing(session, doc, module)
    if rest and doc.error(module) is None:
        session.background(_quiet_stage(session, doc, module, rest))


async def _quiet_stage(session: Session, doc: Document, module: str,
                       targets: list[str]) -> None:
    try:
        await _stage(session, doc, module, targets)
    except LensError as err:  # recorded on the document by _stage; nobody else to tell
        log.info("follow-up check of %s: %s", module, err.message)


async def _stage(
    session: Session,
    doc: Document,
    module: str,
    targets: list[str],
    *,
    progress_token: types.ProgressToken | None = None,
    progress: bool = False,
    cancel_on_abandon: bool = False,
) -> dict[str, LowerResult]:
    """Lower some check targets of `module` and record them (results, verdicts, lenses)."""
    stamp = doc.stamp()
    try:
        results = await session.host.lower(
            doc, module, targets,
            progress_token=progress_token, progress=progress,
            cancel_on_abandon=cancel_on_abandon,
        )
    except LensError as err:
        if err.kind not in NOT_A_VERDICT:
            # Load, inputs and export errors fail every target alike.
            doc.record_failure(stamp, module, err,
                               session.settings_for(doc.path).check_targets)
        raise
    if doc.record_results(stamp, module, results):
        session.refresh_lenses()  # the verdict lens changed
    return {r.target: r for r in results}

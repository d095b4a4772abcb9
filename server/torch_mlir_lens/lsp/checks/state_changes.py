"""What follows a change of settings or trust, whichever feature saw it: the engine's limits,
results dropped, every open document checked again, lenses refreshed, the user told.

`initialize`/`initialized` (`features/lifecycle.py`), configuration changes
(`features/configuration.py`) and trust requests (`features/trust_requests.py`) all end here,
so no feature calls into another.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from torch_mlir_lens.lsp.checks import check_triggers
from torch_mlir_lens.lsp.state.settings import SECTION, section_of
from torch_mlir_lens.lsp.state.trust import UNTRUSTED
from torch_mlir_lens.lsp.wire import convert

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)


async def pull_settings(session: Session) -> None:
    """Fetch `torchMlirLens` from the client (if it can answer) and apply it.

    A client without `workspace/configuration` (Neovim 0.7, Helix, ...) gets the settings it
    last pushed in `workspace/didChangeConfiguration` (over its `initializationOptions`).
    """
    pulled: Mapping[str, Any] | None = None
    if session.client.supports("workspace.configuration"):
        try:
            items = [types.ConfigurationItem(section=SECTION)]
            answer = await asyncio.wait_for(
                session.client.configuration(types.ConfigurationParams(items=items)), 10
            )
            section = convert.json_object(answer[0]) if answer else None
            pulled = section_of(section)
            if pulled is None and section is not None:
                pulled = section  # the section itself, nothing set yet: {}
        except Exception as exc:
            log.warning("could not read the workspace configuration: %s", exc)
    apply_settings(session, pulled if pulled is not None else session.pushed_settings)


def apply_settings(
    session: Session, client_settings: Mapping[str, Any] | None, *, initial: bool = False
) -> None:
    """Make new settings effective: engine limits, caches, lenses and diagnostics."""
    before = session.all_settings()
    _old, _new, problems = session.apply_settings(client_settings)
    after = session.all_settings()
    for problem in problems:
        log.warning(problem)
    if initial or before == after:
        return
    log.info("settings changed")
    session.host.update_config()
    results_changed = any(_changed(before, after, layer, lambda s: s.results_key())
                          for layer in {*before, *after})
    checks_changed = any(_changed(before, after, layer,
                                  lambda s: (s.check_targets, s.diagnostics))
                         for layer in {*before, *after})
    for doc in session.store:
        if results_changed:
            doc.forget_results()
            doc.forget_modules()
    check_triggers.recheck_all(session, lowering=results_changed or checks_changed)
    session.refresh_lenses()  # lens targets, default target or inputs may have changed


def _changed(before: Mapping[Any, Any], after: Mapping[Any, Any], layer: Any,
             part: Any) -> bool:
    """Whether one settings layer changed in `part` (a layer that came or went did)."""
    if layer not in before or layer not in after:
        return True
    return bool(part(before[layer]) != part(after[layer]))


def files_saved(session: Session, paths: list[str]) -> None:
    """Files changed on disk (saved in the editor, or by another program): the answers that
    read them go, whatever their folder, and the open documents whose answers read them are
    checked again (`from lib.acts import Act`, with `lib` in another folder)."""
    saved = {os.path.abspath(p) for p in paths}
    stale: set[str] = set()
    for path in saved:
        stale |= session.host.invalidate(path)
    readers = [doc for doc in session.store
               if doc.path and os.path.abspath(doc.path) in stale - saved]
    for doc in readers:
        doc.forget_results()
        if session.settings_for(doc.path).diagnostics != "off":
            check_triggers.schedule(session, doc, lowering=True)
    if readers:
        log.info("a file changed on disk: checking %d document(s) that read it again",
                 len(readers))
        session.refresh_lenses()


def announce_untrusted(session: Session) -> None:
    """Say once, and in the status, why nothing is lowered (and how to trust)."""
    session.host.set_status(UNTRUSTED, session.trust.detail)
    if session.first_untrusted_announcement():
        session.show(session.trust.announcement, types.MessageType.Warning)
    log.warning("%s", session.trust.detail)


def set_trusted(session: Session, trusted: bool, folders: list[str] | None = None) -> None:
    """Trust (or stop trusting) `folders` (every workspace folder when None); start or stop
    the worker as some trust exists or none is left, and check the open files again."""
    before = (session.trusted, frozenset(session.trust.roots))
    session.trust.state(trusted, folders)
    for doc in session.store:
        session.trust.document_opened(doc.path)
    if (session.trusted, frozenset(session.trust.roots)) == before:
        if not session.trusted:  # "unknown" may have become "not trusted": the status says so
            session.host.set_status(UNTRUSTED, session.trust.detail)
        return
    # A folder's pyproject.toml configures its modules only while the folder is trusted.
    session.apply_settings(session.client_settings)
    session.host.update_config()
    if session.trusted:
        log.info("trusted folders: %s", ", ".join(sorted(session.trust.roots)) or "(opened files)")
        session.host.start()
    else:
        session.background(session.host.stop())
        announce_untrusted(session)
    for doc in session.store:
        if not session.trust.covers(doc.path):
            doc.forget_results()
    check_triggers.recheck_all(session, lowering=True)

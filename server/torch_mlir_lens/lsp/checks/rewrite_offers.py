"""After a module's check, the proven rewrites of its culprits (the worker's `rewrites` job),
and the proven pin past an export refusal, in the background: its diagnostics are published
again carrying them, and the quick fixes (code_actions.py, rewrite_fixes.py) offer them.
A proof that cannot run only leaves them out.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from torch_mlir_lens import discovery
from torch_mlir_lens.lsp.checks.finding_records import result_records
from torch_mlir_lens.lsp.checks.publish import publish
from torch_mlir_lens.lsp.document import Document, Stamp
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.rules.verdict import backend_verdict

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

log = logging.getLogger(__name__)
# How the worker offers a pin past an export refusal (worker/rewrite_jobs/pin_proof.py): the
# `rewrites` job then answers with its proof, which the quick fix writes.
PROVEN_PAST_EXPORT = "a proven way past it"


def proving(session: Session, doc: Document, info: discovery.ModuleInfo,
            results: list[LowerResult], stamp: Stamp) -> None:
    """Start the proof of `info`'s culprits in the background (when it has some)."""
    diagnosed = set(session.settings_for(doc.path).diagnostic_targets)
    failing = [r.target for r in results
               if r.target in diagnosed and (backend_verdict(r).culprits or any(
                   d.kind == ErrorKind.EXPORT_ERROR and PROVEN_PAST_EXPORT in d.message
                   for d in r.diagnostics))]
    if failing:
        session.background(_prove(session, doc, info, results, failing, stamp))


async def _prove(session: Session, doc: Document, info: discovery.ModuleInfo,
                 results: list[LowerResult], failing: list[str], stamp: Stamp) -> None:
    job = session.host.job(doc, info.name)

    async def run(engine: Any) -> Any:
        return await engine.rewrites(job, failing)

    try:
        report = await session.host.call(f"proving rewrites for {info.name}", run)
    except LensError as err:  # no proof: the diagnostics stand as they are
        log.info("rewrites of %s: %s", info.name, err.message)
        return
    records = result_records(doc, info, results, session, offers=report)
    if doc.record_diagnostics(stamp, info.name, records):
        publish(session, doc)

"""`torchMlirLens.profile`: a module compiled for IREE CPU, timed against eager PyTorch on the
same inputs and threads, and each dispatch timed and shared among the lines fused into it (the
worker's `LowerJob.profile`, worker/iree/timing.py).

The profiled result replaces the module's IREE CPU check result on the document (the same IR,
with `stats.speed` and `stats.line_costs`): the "Time on IREE CPU" lens then shows the time
beside eager's and the hover each line's share (`iree_view.py`); the answer carries them for
the client's heat band.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from torch_mlir_lens.lsp.checks.requested_module import document_and_module
from torch_mlir_lens.lsp.wire import answers, convert
from torch_mlir_lens.lsp.wire.request_io import lens_error, single_arg
from torch_mlir_lens.protocol import lsp as lens_types
from torch_mlir_lens.protocol.results import ErrorKind, LensError, LowerResult
from torch_mlir_lens.rules.verdict import backend_verdict

if TYPE_CHECKING:
    from torch_mlir_lens.lsp.checks.session import Session

PROFILE = lens_types.PROFILE
CPU = "iree-cpu"  # the IREE target that runs here: the one a profile times


async def profile(session: Session, *args: Any) -> lens_types.ProfileResponse:
    """Time the module on IREE CPU; its time, eager's and each line's share."""
    params = single_arg(session.client, args, lens_types.ProfileArgs)
    target = params.target or CPU
    if target != CPU:
        raise JsonRpcInvalidParams(f"a profile times a module compiled for the CPU ({CPU}), "
                                   f"not {target!r}")
    doc, _info, module = document_and_module(session, params.uri, params.module)
    stamp = doc.stamp()
    try:
        results = await session.host.lower(doc, module, [target], profile=True,
                                           cancel_on_abandon=False)
    except LensError as err:
        raise lens_error(err) from None
    if not results:
        raise lens_error(LensError(ErrorKind.LOWERING_ERROR, "the engine returned no result"))
    result = results[0]
    if doc.record_results(stamp, module, [result]):
        session.refresh_lenses()
    return response(module, result)


def response(module: str, result: LowerResult) -> lens_types.ProfileResponse:
    """The profile's answer: the time against eager's and each line's share, or why none."""
    stats = result.stats
    costs = [lens_types.LineCost(uri=convert.path_to_uri(str(c["file"])), line=int(c["line"]),
                                 ms=float(c.get("ms") or 0.0), share=float(c.get("share") or 0.0))
             for c in stats.get("line_costs") or []
             if isinstance(c, dict) and c.get("file") and isinstance(c.get("line"), int)]
    speed = answers.compiled_speed(stats.get("speed"))
    message = None
    if speed is None:
        verdict = backend_verdict(result)
        message = verdict.error.message if verdict.error else (
            verdict.culprits[0].message if verdict.culprits else "the module was not timed")
    return lens_types.ProfileResponse(module=module, target=result.target, speed=speed,
                                      line_costs=costs, message=message)

"""Repeated blocks traced once: one function per group of identical blocks, called at each use.

A model that repeats a block (80 decoder layers in a ModuleList) is exported and lowered with
the block traced once, as a function of its inputs and weights, and `main` calling it at each
layer with that layer's weights. Lowering time then barely grows with depth, and the IR shows
each block once. Two blocks share a function only when that is proven; anything unproven is
lowered inline, as without stitching.

    find.py      candidate blocks: siblings of one class in a ModuleList / Sequential / Dict
    record.py    one call's ATen ops written down block-independently: its digest (the proof)
    reads.py     the module attributes a call reads, and a later call's key under them
    survey.py    one fake-tensor run of the whole module: each block call recorded or matched
    prove.py     calls with one digest → groups (named after the block's class)
    trace.py     a group's block exported once, its weights as arguments
    block_cache.py  traced blocks kept across lowerings and processes (an edit to the parent
                    re-uses them; so do a restarted server and each engine of `check`)
    parent_cache.py the parent's export kept across lowerings differing only in a block's
                    forward (an edit to the block re-uses it)
    stub.py      the parent's export with each block call as one custom op
    stitch.py    one MLIR module: `main` + a private function per group, the ops → func.call
    lowering.py  a stitched module through the backend pipelines
    program.py   the whole export (`export_with_blocks`) and `StitchedProgram`
    fx_view.py   the `fx` target of a stitched program: the parent graph, then each block's

The worker calls `export` (job_handlers.py); the lowerer recognises a `StitchedProgram`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


def export(fn: Any, resolved: Any, inline: Callable[[], Any], job: Any,
           user_files: list[str], text: str, why_inline: str = "") -> tuple[Any, Any]:
    """`fn` exported for the module job `job` (its inputs `resolved`): stitched when its
    blocks are proven and the job allows it, else `inline()` (`why_inline`: the caller's
    reason to, when it has one). Returns (program, outcome)."""
    from torch_mlir_lens.worker.blocks import block_cache
    from torch_mlir_lens.worker.blocks.program import Outcome, export_with_blocks
    from torch_mlir_lens.worker.ir.locations import UserFiles

    why_not = (why_inline if why_inline
               else "inline: asked for" if getattr(job, "inline_blocks", False)
               else "inline: strict export" if job.strict
               else "inline: dynamic dims" if resolved.dynamic_shapes is not None else "")
    if why_not:
        return inline(), Outcome(reason=why_not)
    block_cache.use_folder(job.block_cache)
    return export_with_blocks(fn, tuple(resolved.args), dict(resolved.kwargs or {}), inline,
                              users=UserFiles(user_files),
                              texts={os.path.normpath(job.path): text}, job_key=_job_key(job))


def _job_key(job: Any) -> str:
    """What decides a module job's export besides its file's text: its other fields and the
    stamps of the .py files beside it (as `protocol.programs.program_key`)."""
    import hashlib
    import json

    from torch_mlir_lens.protocol.programs import folder_stamp

    fields = {k: v for k, v in job.module_fields().to_json().items()
              if k not in ("text", "fingerprint", "block_cache")}
    blob = json.dumps([fields, folder_stamp(job.path)], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def counters() -> dict[str, int]:
    """The worker's block counters: functions traced, re-used from memory and from disk,
    written to disk; parent exports re-used."""
    from torch_mlir_lens.worker.blocks import block_cache, parent_cache

    return {**block_cache.counters(), **parent_cache.counters()}


__all__ = ["counters", "export"]

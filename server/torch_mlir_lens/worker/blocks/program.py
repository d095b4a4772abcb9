"""Export a module with its repeated blocks traced once: survey, prove, trace, stub, stitch.

    export_with_blocks(fn, args, kwargs, export, users=..., texts=...)
        → (program, Outcome)

`export()` is the product's inline export of `fn` (it raises LensError). When `fn` has proven
groups of blocks, the program is a `StitchedProgram`: the parent exported with each block call
as one op, one exported function per group, and the stitched raw MLIR module (imported here,
so that a stitch that does not fit falls back before anything is shown). Otherwise it is what
`export()` returns, and the outcome says why.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from torch_mlir_lens.protocol.results import LensError
from torch_mlir_lens.worker.blocks import block_cache, parent_cache
from torch_mlir_lens.worker.blocks.prove import Chain, Group, find_chains, group_calls
from torch_mlir_lens.worker.blocks.stitch import (
    Function,
    StitchError,
    parse_module,
    raw_function,
    readable_function,
    stitch,
)
from torch_mlir_lens.worker.blocks.stub import (
    NAMESPACE,
    ChainPlan,
    GroupKernel,
    InChain,
    StubbedCall,
    new_kernel,
    stubbed,
)
from torch_mlir_lens.worker.blocks.survey import survey
from torch_mlir_lens.worker.blocks.trace import export_block
from torch_mlir_lens.worker.ir.crash_guard import noted_weights
from torch_mlir_lens.worker.ir.locations import UserFiles

MAX_LISTED = 8  # calls left inline named in the stats (the count is complete)


@dataclass
class StitchedBlock:
    """One group's function in a stitched program."""

    symbol: str
    class_name: str
    paths: list[str]  # the blocks it stands for ("layers.0", ...)
    ops: int  # ATen ops of one call
    traced: block_cache.Traced
    kernel: GroupKernel
    source: str  # "traced", "cached" (this worker's) or "stored" (the persistent cache's)
    calls: int = 0  # call sites in the stitched module

    def stats(self) -> dict[str, Any]:
        return {"function": self.symbol, "class": self.class_name, "calls": self.calls,
                "ops": self.ops, "source": self.source}


@dataclass
class Outcome:
    """What became of the blocks of one export: stitched or why not, the calls left inline."""

    stitched: bool = False
    reason: str = ""
    inline: list[tuple[str, str]] = field(default_factory=list)  # (block path, why)
    seconds: dict[str, float] = field(default_factory=dict)
    blocks: list[StitchedBlock] = field(default_factory=list)
    surveyed: tuple[int, int] = (0, 0)  # block calls seen, and run (the others matched)
    chains: int = 0  # block calls made by chain ops (the parent's export saw one op each)
    retried: str = ""  # why the parent was exported again, one op per call
    parent: str = ""  # "exported", or "reused" (kept from a lowering differing in a forward)

    def stats(self) -> dict[str, Any]:
        """Keys added to a result's stats."""
        out: dict[str, Any] = {"blocks": [b.stats() for b in self.blocks]}
        if self.reason:
            out["blocks_note"] = self.reason
        if self.inline:
            out["blocks_inline"] = len(self.inline)
            out["blocks_inline_why"] = [f"{p}: {why}" for p, why in self.inline[:MAX_LISTED]]
        if self.surveyed[0]:
            out["blocks_survey"] = {"calls": self.surveyed[0], "recorded": self.surveyed[1],
                                    "chained": self.chains}
        if self.retried:
            out["blocks_retried"] = self.retried
        if self.parent:
            out["blocks_parent"] = self.parent
        if self.seconds:
            out["blocks_seconds"] = {k: round(v, 4) for k, v in self.seconds.items()}
        return out


class StitchedProgram:
    """The parent's ExportedProgram (every attribute not defined here is its), its blocks'
    functions, and the stitched raw module."""

    is_stitched = True

    def __init__(self, parent: Any, blocks: list[StitchedBlock], raw: Any) -> None:
        self.parent = parent
        self.blocks = blocks
        self._raw = raw

    def __getattr__(self, name: str) -> Any:
        return getattr(self.parent, name)

    @property
    def state_dict(self) -> dict[str, Any]:
        """The parent's parameters and buffers and its stitched blocks' weights (by their
        names in the model): the weights the module's IR holds."""
        merged = dict(self.parent.state_dict)
        for block in self.blocks:
            kernel = block.kernel
            for site in kernel.sites:
                merged.update(zip(kernel.weight_names(site), kernel.weights(site), strict=True))
        return merged

    @property
    def constants(self) -> dict[str, Any]:
        """The parent's lifted constants and the block functions' (by function)."""
        merged = dict(getattr(self.parent, "constants", None) or {})
        for block in self.blocks:
            for name, value in block.traced.constants.items():
                merged[f"{block.symbol}.{name}"] = value
        return merged

    @property
    def block_programs(self) -> list[Any]:
        return [block.traced.program for block in self.blocks]

    @property
    def symbols(self) -> set[str]:
        return {block.symbol for block in self.blocks}

    def raw_module(self) -> Any:
        """The stitched raw module (imported once, at export)."""
        return self._raw


def _digest_key(group: Group, users: UserFiles, texts: dict[str, str]) -> str | None:
    rep = group.representative
    source = block_cache.source_key(type(rep.module), users, texts)
    if source is None:
        return None
    return hashlib.sha256(f"{rep.digest}:{source}".encode()).hexdigest()


def _block(group: Group, users: UserFiles, texts: dict[str, str]) -> StitchedBlock:
    rep = group.representative
    key = _digest_key(group, users, texts)
    traced, tier = block_cache.lookup(key, users)
    if traced is not None and key is not None and tier == "disk" and not readable_function(
            traced.raw or b""):
        block_cache.forget(key)  # foreign bytes in the folder: traced again, stored anew
        traced, tier = None, ""
    source = {"memory": "cached", "disk": "stored"}.get(tier, "traced")
    if traced is None:
        program = export_block(rep, users)
        traced = block_cache.Traced.of(program)
        traced.raw = raw_function(program, users)
        block_cache.store(key, traced, users, block_cache.class_file(type(rep.module)))
    if traced.raw is None:
        traced.raw = raw_function(traced.program, users)
    # An entry read from disk traces its program only if something asks for it, from this
    # lowering's representative (the same class, code and digest as the one it was made of).
    if traced.stored:
        traced.retrace = lambda: export_block(rep, users)
    kernel = new_kernel(rep.out_metas)
    kernel.run = traced.run
    return StitchedBlock(group.symbol, group.class_name, [c.path for c in group.calls],
                         rep.ops, traced, kernel, source)


def _call_sites(program: Any) -> dict[int, int]:
    """Group number → the stitched ops of the parent graph calling it."""
    counts: dict[int, int] = {}
    for node in program.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "namespace", "") == NAMESPACE:
            number = node.args[0]
            if isinstance(number, int):
                counts[number] = counts.get(number, 0) + 1
    return counts


def export_with_blocks(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                       export: Any, *, users: UserFiles, texts: dict[str, str],
                       job_key: str | None = None) -> tuple[Any, Outcome]:
    """`fn` exported with its repeated blocks stitched when proven, else `export()`'s.
    `job_key`: what decides the export besides the file's text (the job's other fields,
    the files beside it); without it no parent export is kept (`parent_cache.py`)."""
    outcome = Outcome()
    if not isinstance(fn, torch.nn.Module):
        outcome.reason = "a function, not a module"
        return export(), outcome
    start = time.perf_counter()
    try:
        found = survey(fn, args, dict(kwargs or {}))
    except Exception as exc:  # the user's forward can raise anything on fake tensors
        outcome.reason = f"the survey on fake tensors failed: {type(exc).__name__}: " \
                         f"{str(exc).splitlines()[0][:200] if str(exc) else ''}"
        return export(), outcome
    outcome.seconds["survey"] = time.perf_counter() - start
    outcome.surveyed = (len(found.calls), found.recorded)
    grouping = group_calls(found.calls)
    find_chains(found.calls, grouping, found.seen_by_parent)
    outcome.inline = grouping.inline
    if not grouping.groups:
        outcome.reason = found.reason or "no two blocks proven to run the same ops"
        return export(), outcome
    start = time.perf_counter()
    made: list[tuple[Group, StitchedBlock]] = []
    for group in grouping.groups:
        try:
            made.append((group, _block(group, users, texts)))
        except LensError as err:
            why = f"its function did not export: {err.message.splitlines()[0][:200]}"
            outcome.inline.extend((c.path, why) for c in group.calls)
    outcome.seconds["trace"] = time.perf_counter() - start
    if not made:
        outcome.reason = "no block function exported"
        return export(), outcome
    chains = [c for c in grouping.chains if any(c.group is g for g, _b in made)]
    start = time.perf_counter()
    entry_key = parent_cache.key(job_key, fn, args, kwargs, texts, [g for g, _b in made], chains)
    outcome.seconds["parent_key"] = time.perf_counter() - start
    return _export_parent(fn, made, chains, export, users, outcome, entry_key=entry_key)


Plans = dict[int, tuple[torch.nn.Module, dict[str, StubbedCall | InChain]]]


def _plans(made: list[tuple[Group, StitchedBlock]], chains: list[Chain]) -> Plans:
    """What each block's stub does with each call: its op, or its place in a chain."""
    plans: Plans = {}
    kernels = {id(group): block.kernel for group, block in made}
    for group, block in made:
        for call in group.calls:
            block.kernel.paths.setdefault(id(call.module), call.path)
            entry = plans.setdefault(id(call.module), (call.module, {}))
            entry[1][call.call_key] = StubbedCall(block.kernel, group.representative)
    for chain in chains:
        plan = ChainPlan(kernels[id(chain.group)], chain.group.representative,
                         [c.module for c in chain.calls], chain.carried)
        for index, call in enumerate(chain.calls):
            plans[id(call.module)][1][call.call_key] = InChain(plan, index)
    return plans


def _export_parent(fn: Any, made: list[tuple[Group, StitchedBlock]], chains: list[Chain],
                   export: Any, users: UserFiles, outcome: Outcome,
                   first: bool = True, entry_key: str | None = None) -> tuple[Any, Outcome]:
    """The parent exported with its blocks stubbed: first with chains and the blocks'
    submodules out of sight (or that export kept from a lowering that differed only in a
    block's forward, `parent_cache.py`), then (that failing) one op per call, then inline."""
    if first and entry_key is not None:
        entry = parent_cache.lookup(entry_key, fn)
        if entry is not None:
            reused = _reused_parent(fn, entry, made, outcome)
            if reused is not None:
                return reused
    start = time.perf_counter()
    classes = list({type(g.representative.module): None for g, _b in made})
    try:
        with stubbed(_plans(made, chains if first else []), submodules=first), \
                parent_cache.forwards_watched(classes if entry_key else []) as ran:
            parent = export()
    except LensError as err:
        if not first:
            outcome.reason = (f"the export with stitched blocks failed "
                              f"({err.message.splitlines()[0]})")
            return export(), outcome
        outcome.retried = err.message.splitlines()[0][:200]
        return _export_parent(fn, made, chains, export, users, outcome, first=False,
                              entry_key=entry_key)
    chains = chains if first else []
    outcome.chains = sum(len(c.calls) for c in chains)
    outcome.seconds["parent_export"] = time.perf_counter() - start
    outcome.parent = "exported"
    sites = _call_sites(parent)
    blocks = [block for _group, block in made if sites.get(block.kernel.number)]
    if not blocks:
        outcome.reason = "no block call was stitched"
        return parent, outcome
    start = time.perf_counter()
    from torch_mlir_lens.worker.stages.torch_export import import_program

    try:
        raw = import_program(parent, users)
        if first and entry_key is not None and not ran:  # no forward of a block ran
            parent_cache.store(entry_key, fn, parent, raw, noted_weights(raw.context),
                               [b.kernel for _g, b in made], outcome.chains)
        counts = stitch(raw, [Function(b.symbol, b.kernel, b.traced.raw or b"")
                              for b in blocks])
    except (StitchError, LensError) as err:
        outcome.reason = f"the stitch did not fit ({err}); lowered inline"
        return export(), outcome
    outcome.seconds["import"] = time.perf_counter() - start
    return _stitched(parent, blocks, raw, counts, outcome)


def _stitched(parent: Any, blocks: list[StitchedBlock], raw: Any, counts: dict[str, int],
              outcome: Outcome) -> tuple[StitchedProgram, Outcome]:
    for block in blocks:
        block.calls = counts.get(block.symbol, 0)
    outcome.stitched, outcome.blocks = True, blocks
    return StitchedProgram(parent, blocks, raw), outcome


def _reused_parent(fn: Any, entry: parent_cache.Entry, made: list[tuple[Group, StitchedBlock]],
                   outcome: Outcome) -> tuple[StitchedProgram, Outcome] | None:
    """The kept parent export stitched with this lowering's blocks; None when it does not
    fit after all (the parent is then exported)."""
    start = time.perf_counter()
    try:
        kernels = parent_cache.kernels_for(
            entry, fn, [(b.kernel, list(g.representative.weights)) for g, b in made])
        raw = parse_module(entry.raw, entry.weight_bytes)
        sites = _call_sites(entry.parent)
        called = [(b, k) for (_g, b), k in zip(made, kernels, strict=True)
                  if sites.get(k.number)]
        counts = stitch(raw, [Function(b.symbol, k, b.traced.raw or b"") for b, k in called])
    except (StitchError, LensError, AttributeError, ValueError):
        return None  # the blocks keep their own kernels, for the export that follows
    for (_group, block), kernel in zip(made, kernels, strict=True):
        block.kernel = kernel
    blocks = [block for block, _kernel in called]
    outcome.chains = entry.chained
    outcome.parent = "reused"
    outcome.seconds["import"] = time.perf_counter() - start
    return _stitched(entry.parent, blocks, raw, counts, outcome)


__all__ = ["Outcome", "StitchedBlock", "StitchedProgram", "export_with_blocks"]

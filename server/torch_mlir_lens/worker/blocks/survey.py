"""One run of the whole module on fake tensors: every call of a candidate block, proven.

The module's forward runs once on fake tensors (under its own fake mode when it was built
without weights). Each candidate block (`find.py`) gets, for the run, a forward that decides
per call:

- the first call of a class is recorded: its ops (`record.py`, the digest) and the attributes
  it reads (`reads.py`, its key);
- a later call whose key equals a recorded call's reads the same state where that one did:
  its ops are not run at all, its result is made from the recorded call's output types (this
  is what keeps the run's time from growing with depth);
- samples are recorded anyway: the second call matching each key and each class's last block;
  a sample whose digest differs from the call its key matched means the reads missed
  something, and the run starts again recording every call (the key is then not trusted);
- any other call is recorded (and may start a key of its own).

The run takes the paths torch.export's takes: it runs with torch's "compiling / exporting"
flags set, as export sets them (libraries branch on them: transformers makes an attention
mask while exporting that it leaves out in eager mode).

A block called inside another block's call belongs to the outer call. Outside the blocks,
the run notes which tensors the parent's own ops read and which its forward returns: a block's
result nobody but the next block reads lets a chain of blocks be one op (`prove.py`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from torch_mlir_lens.worker.blocks.find import candidate_blocks
from torch_mlir_lens.worker.blocks.reads import state_key, watching
from torch_mlir_lens.worker.blocks.record import (
    BlockCall,
    OpenCall,
    Recorder,
    new_call,
    rebuild_output,
)
from torch_mlir_lens.worker.loading.kept_state import state_kept


@dataclass
class Survey:
    """The block calls of one forward, in call order, or why there are none."""

    calls: list[BlockCall] = field(default_factory=list)
    reason: str = ""  # set when there is nothing to stitch
    fake_mode: FakeTensorMode | None = None
    recorded: int = 0  # calls whose ops were run
    trusted_keys: bool = True  # False: a sample disproved a key, every call was recorded
    # id() of the tensors the parent's own ops read or its forward returned (kept alive).
    seen_by_parent: dict[int, Any] = field(default_factory=dict)


@dataclass
class _Keyed:
    """A recorded call that later calls may match by key."""

    key: tuple[Any, ...]
    call: BlockCall
    matched: int = 0


class _Disproved(Exception):
    """A sample's ops differ from those of the call its key matched."""



class _Run:
    """The per-call decisions of one survey."""

    def __init__(self, blocks: dict[int, str], last: set[int], use_keys: bool) -> None:
        self.blocks = blocks
        self.last = last
        self.use_keys = use_keys
        self.keyed: dict[type, list[_Keyed]] = {}
        self.calls: list[BlockCall] = []
        self.depth = 0
        self.recorded = 0

    def call(self, module: torch.nn.Module, forward: Callable[..., Any],
             args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self.depth:
            return forward(*args, **kwargs)
        call = new_call(module, self.blocks[id(module)], args, kwargs)
        self.calls.append(call)
        if call.problem is not None:
            out = self._plain(forward, args, kwargs)
        else:
            match = self._match(module, args, kwargs) if self.use_keys else None
            if match is not None and match.matched > 0 and id(module) not in self.last:
                match.matched += 1
                out = _shortcut(call, match.call)
            else:
                out = self._record(call, module, forward, args, kwargs, match)
        call.returned = pytree.tree_leaves(out)
        return out

    def _plain(self, forward: Callable[..., Any], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> Any:
        self.depth += 1
        try:
            return forward(*args, **kwargs)
        finally:
            self.depth -= 1

    def _match(self, module: torch.nn.Module, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> _Keyed | None:
        for keyed in self.keyed.get(type(module), []):
            if keyed.call.reads is not None and state_key(
                    module, keyed.call.reads, args, kwargs) == keyed.key:
                return keyed
        return None

    def _record(self, call: BlockCall, module: torch.nn.Module, forward: Callable[..., Any],
                args: tuple[Any, ...], kwargs: dict[str, Any], match: _Keyed | None) -> Any:
        opened = OpenCall(call)
        self.recorded += 1
        with watching(module) as reads, Recorder(opened):
            out = self._plain(forward, args, kwargs)
        opened.close(out)
        if match is not None:  # a sample of a key
            match.matched += 1
            if call.digest != match.call.digest:
                raise _Disproved(call.path)
        elif reads is not None and call.problem is None:
            call.reads = dict(reads)
            key = state_key(module, call.reads, args, kwargs)
            if key is not None:
                self.keyed.setdefault(type(module), []).append(_Keyed(key, call))
        return out


def _shortcut(call: BlockCall, like: BlockCall) -> Any:
    """`call` as a copy of `like` (same key): its output made from `like`'s output types."""
    call.weights, call.weight_metas = list(like.weights), list(like.weight_metas)
    call.outputs, call.out_spec, call.out_metas = like.outputs, like.out_spec, like.out_metas
    call.ops, call.digest, call.recorded = like.ops, like.digest, False
    tensors = [call.leaves[p] for p in call.tensor_at]
    device = tensors[0].device
    results = [torch.empty_strided(m.shape, m.stride, dtype=m.dtype, device=device)
               for m in call.out_metas]
    return rebuild_output(call.outputs, call.out_spec, results, tensors)


class _ParentReads(TorchDispatchMode):
    """Notes the tensors the parent's own ops (outside every block call) read."""

    def __init__(self, run: _Run, seen: dict[int, Any]) -> None:
        super().__init__()
        self.run = run
        self.seen = seen

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if not self.run.depth:
            for leaf in pytree.tree_leaves((args, kwargs)):
                if isinstance(leaf, torch.Tensor):
                    self.seen[id(leaf)] = leaf
        return func(*args, **kwargs)


def _fake_mode_of(root: torch.nn.Module, leaves: list[Any]) -> FakeTensorMode:
    """The fake mode the module's weights (or inputs) belong to, else a new one."""
    for tensor in [*root.parameters(), *root.buffers(), *leaves]:
        if isinstance(tensor, FakeTensor):
            return tensor.fake_mode
    return FakeTensorMode(allow_non_fake_inputs=True)


@contextlib.contextmanager
def _as_export_sees_it() -> Iterator[None]:
    """torch.compiler.is_compiling() and is_exporting() true, as while torch.export traces."""
    compiling, exporting = torch.compiler._is_compiling_flag, torch.compiler._is_exporting_flag
    torch.compiler._is_compiling_flag = torch.compiler._is_exporting_flag = True
    try:
        yield
    finally:
        torch.compiler._is_compiling_flag = compiling
        torch.compiler._is_exporting_flag = exporting


def _last_of_class(root: torch.nn.Module, blocks: dict[int, str]) -> set[int]:
    last: dict[type, int] = {}
    for module in root.modules():
        if id(module) in blocks:
            last[type(module)] = id(module)
    return set(last.values())


def _run_once(root: torch.nn.Module, blocks: dict[int, str], args: tuple[Any, ...],
              kwargs: dict[str, Any], mode: FakeTensorMode, use_keys: bool,
              seen: dict[int, Any]) -> _Run:
    run = _Run(blocks, _last_of_class(root, blocks), use_keys)
    modules = {id(m): m for m in root.modules() if id(m) in blocks}
    saved: dict[int, Any] = {}

    def forward_of(module: torch.nn.Module) -> Callable[..., Any]:
        original = module.forward

        def forward(*a: Any, **k: Any) -> Any:
            return run.call(module, original, a, k)

        return forward

    try:
        for key, module in modules.items():
            saved[key] = module.__dict__.get("forward")
            module.forward = forward_of(module)  # type: ignore[method-assign]
        # What the forward caches on fake tensors stays out of the model (and out of a
        # second run after a disproved key).
        with (torch.no_grad(), _as_export_sees_it(), mode, _ParentReads(run, seen),
              state_kept(root)):
            out = root(*args, **kwargs)
        for leaf in pytree.tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                seen[id(leaf)] = leaf
    finally:
        for key, module in modules.items():
            if saved.get(key) is None:
                module.__dict__.pop("forward", None)
            else:
                module.forward = saved[key]  # type: ignore[method-assign]
    return run


def survey(root: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Survey:
    """Run `root(*args, **kwargs)` on fake tensors, recording or matching each call of its
    candidate blocks. Raises what the forward raises (the caller then lowers inline)."""
    blocks = candidate_blocks(root)
    if not blocks:
        return Survey(reason="no submodules of one class side by side in a container")
    leaves = pytree.tree_leaves((tuple(args), dict(kwargs)))
    mode = _fake_mode_of(root, leaves)

    def fake(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and not isinstance(value, FakeTensor):
            return mode.from_tensor(value)
        return value

    fake_args, fake_kwargs = pytree.tree_map(fake, (tuple(args), dict(kwargs)))
    seen: dict[int, Any] = {}
    try:
        run = _run_once(root, blocks, fake_args, fake_kwargs, mode, True, seen)
        trusted = True
    except _Disproved:
        seen.clear()
        run = _run_once(root, blocks, fake_args, fake_kwargs, mode, False, seen)
        trusted = False
    return Survey(run.calls, fake_mode=mode, recorded=run.recorded, trusted_keys=trusted,
                  seen_by_parent=seen)


__all__ = ["Survey", "survey"]

"""The ops one call of a block runs, written down so that two calls can be compared.

While a block runs on fake tensors (no memory, no arithmetic) a dispatch mode sees every ATen
op. Each op is written down with its arguments in a form that does not depend on which block
ran it: a tensor argument is "input i", "weight <name relative to the block>", "result k of an
earlier op", or a constant (by value); scalars, dtypes and shapes as they are. The call's
digest hashes that list, the block's class, the types of its inputs and outputs and the
weights' shapes and dtypes: two calls with one digest run the same ops on the same kinds of
values, in the same order, each reading its own weights in the same places, and so one
function of the weights computes both.

A call that cannot be written down so gets a `problem` (and shares no function): it writes to
an input or a weight in place, reads a tensor that is neither its input, its weight nor a
constant (an activation of the parent reached through an attribute), or returns a Python
object that is not plain data.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

# A real tensor constant this big is told apart by identity, not by its bytes.
_HASHED_CONSTANT_ELEMENTS = 1 << 20
_PLAIN = (bool, int, str, type(None))


@dataclass(frozen=True)
class TensorMeta:
    """A tensor's shape, strides and dtype: all the stitched call's types need."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype

    @classmethod
    def of(cls, tensor: torch.Tensor) -> TensorMeta:
        return cls(tuple(int(d) for d in tensor.shape), tuple(int(s) for s in tensor.stride()),
                   tensor.dtype)


@dataclass(frozen=True)
class OutLeaf:
    """Where one leaf of a block's output comes from: "result" (the j-th tensor the stitched
    call returns), "input" (its i-th tensor input, passed through) or "value" (a plain Python
    value)."""

    kind: str
    index: int = 0
    name: str = ""
    value: Any = None


def rebuild_output(outputs: list[OutLeaf], spec: Any, results: list[Any],
                   tensors: list[Any]) -> Any:
    """A block call's output, its leaves taken from `results` (what the stitched call
    returns), `tensors` (the call's tensor inputs) or the recorded plain values."""
    leaves: list[Any] = []
    for leaf in outputs:
        if leaf.kind == "result":
            leaves.append(results[leaf.index])
        elif leaf.kind == "input":
            leaves.append(tensors[leaf.index])
        else:
            leaves.append(leaf.value)
    return pytree.tree_unflatten(leaves, spec)


@dataclass
class BlockCall:
    """One call of a candidate block, as recorded."""

    module: torch.nn.Module
    path: str  # where the block sits in the root module ("layers.3")
    in_spec: Any  # pytree spec of (args, kwargs)
    leaves: list[Any]  # the input leaves; tensors are the recording's fake tensors
    tensor_at: list[int]  # positions of the tensor leaves among `leaves`
    in_metas: list[TensorMeta]
    weights: list[str] = field(default_factory=list)  # read, in first-use order
    weight_metas: list[TensorMeta] = field(default_factory=list)
    outputs: list[OutLeaf] = field(default_factory=list)
    out_spec: Any = None
    out_metas: list[TensorMeta] = field(default_factory=list)  # the stitched call's results
    ops: int = 0
    digest: str = ""
    call_key: Any = None  # what a call with the same inputs has (`call_key()`)
    problem: str | None = None  # why this call cannot share a function
    recorded: bool = True  # False: its ops were not run, its state matched a recorded call's
    reads: dict[tuple[str, str], None] | None = None  # what a recorded call read (reads.py)
    returned: list[Any] = field(default_factory=list)  # the output leaves, as returned


def call_key(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A block call's inputs as a key (a tuple, compared exactly): the same for a call of the
    same module with inputs of the same types and the same plain values (what the export's
    stub looks a call up by)."""
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    return (id(module), spec, tuple(TensorMeta.of(leaf) if isinstance(leaf, torch.Tensor)
                                    else _plain(leaf) for leaf in leaves))


def _plain(value: Any) -> Any:
    """A plain value as data; anything else by type and identity."""
    if isinstance(value, _PLAIN):
        return (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, torch.dtype | torch.device | torch.layout | torch.memory_format):
        return str(value)
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_plain(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((_plain(k), _plain(v)) for k, v in value.items()))
    if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
        return ("sym", str(value))
    return ("object", type(value).__qualname__, id(value))


def attribute(module: torch.nn.Module, name: str) -> Any:
    """`module.<name>` for a dotted name (a weight of a submodule)."""
    value: Any = module
    for part in name.split("."):
        value = getattr(value, part)
    return value


def _hash(parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def _weight_names(block: torch.nn.Module) -> dict[int, tuple[torch.Tensor, str]]:
    """id(tensor) → (tensor, its name in the block): parameters, buffers and plain tensor
    attributes of the block and its submodules (a shared tensor by its first name)."""
    names: dict[int, tuple[torch.Tensor, str]] = {}
    for prefix, sub in block.named_modules(remove_duplicate=False):
        own = [*sub._parameters.items(), *sub._buffers.items(),
               *((k, v) for k, v in vars(sub).items() if isinstance(v, torch.Tensor))]
        for attr, tensor in own:
            if isinstance(tensor, torch.Tensor) and id(tensor) not in names:
                names[id(tensor)] = (tensor, f"{prefix}.{attr}" if prefix else attr)
    return names


class OpenCall:
    """A block call being recorded (`Recorder` writes its ops, `close` its digest)."""

    def __init__(self, call: BlockCall) -> None:
        self.call = call
        self.refs: dict[int, tuple[torch.Tensor, Any]] = {}  # id → (tensor, its ref)
        self.weight_ids = _weight_names(call.module)
        self.used: dict[str, int] = {}  # weight name → its position in call.weights
        self.entries: list[Any] = []
        self.kept: list[Any] = []  # what an entry names by identity stays alive
        self.results = 0
        for position, leaf in enumerate(call.leaves):
            if isinstance(leaf, torch.Tensor):
                index = call.tensor_at.index(position)
                self.refs.setdefault(id(leaf), (leaf, ("input", index)))

    def fail(self, problem: str) -> None:
        if self.call.problem is None:
            self.call.problem = problem

    def ref(self, tensor: torch.Tensor) -> Any:
        known = self.refs.get(id(tensor))
        if known is not None:
            return known[1]
        weight = self.weight_ids.get(id(tensor))
        if weight is not None:
            name = weight[1]
            if name not in self.used:
                self.used[name] = len(self.call.weights)
                self.call.weights.append(name)
                self.call.weight_metas.append(TensorMeta.of(tensor))
            ref = ("weight", self.used[name])
        else:
            ref = self._constant(tensor)
        self.refs[id(tensor)] = (tensor, ref)
        return ref

    def _constant(self, tensor: torch.Tensor) -> Any:
        """A tensor from outside the block: a constant by its values, else a problem."""
        meta = TensorMeta.of(tensor)
        values = tensor.constant if isinstance(tensor, FakeTensor) else (
            None if tensor.is_meta else tensor)
        if values is None:
            self.fail(f"reads a tensor {list(meta.shape)} that is neither an input nor a "
                      "weight of the block")
            self.kept.append(tensor)
            return ("foreign", id(tensor))
        if values.numel() > _HASHED_CONSTANT_ELEMENTS:
            self.kept.append(tensor)
            return ("constant", meta, id(tensor))
        data = values.detach().contiguous().cpu()
        digest = hashlib.sha256(data.view(torch.uint8).numpy().tobytes()
                                if data.numel() else b"").hexdigest()
        return ("constant", meta, digest)

    def norm(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self.ref(value)
        if isinstance(value, list | tuple):
            return (type(value).__name__, tuple(self.norm(v) for v in value))
        if isinstance(value, dict):
            return ("dict", tuple((_plain(k), self.norm(v)) for k, v in value.items()))
        plain = _plain(value)
        if isinstance(plain, tuple) and plain[:1] == ("object",):
            self.kept.append(value)
        return plain

    def op(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The entry of one op, taken before it runs (an in-place op changes its inputs)."""
        entry = [str(func), self.norm(args), self.norm(kwargs)]
        for position, arg in enumerate(func._schema.arguments):
            alias = arg.alias_info
            if alias is None or not alias.is_write:
                continue
            value = args[position] if position < len(args) else kwargs.get(arg.name)
            for tensor in pytree.tree_leaves(value):
                if isinstance(tensor, torch.Tensor):
                    kind = self.ref(tensor)[0]
                    if kind != "result":
                        self.fail(f"writes to its {kind} in place ({func})")
        self.entries.append(entry)
        return entry

    def produced(self, entry: list[Any], out: Any) -> None:
        metas = []
        for tensor in pytree.tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                self.refs[id(tensor)] = (tensor, ("result", self.results))
                self.results += 1
                metas.append((tuple(tensor.shape), str(tensor.dtype)))
        entry.append(metas)

    def close(self, output: Any) -> None:
        call = self.call
        leaves, call.out_spec = pytree.tree_flatten(output)
        returned: dict[Any, int] = {}
        for leaf in leaves:
            if not isinstance(leaf, torch.Tensor):
                plain = _plain(leaf)
                if isinstance(plain, tuple) and plain[:1] == ("object",):
                    self.fail(f"returns a {type(leaf).__qualname__} object")
                call.outputs.append(OutLeaf("value", value=leaf))
                continue
            ref = self.ref(leaf)
            if ref[0] == "input":
                call.outputs.append(OutLeaf("input", index=ref[1]))
            elif ref[0] == "weight":
                self.fail("returns one of its weights")
            elif ref[0] == "result":
                if ref not in returned:
                    returned[ref] = len(call.out_metas)
                    call.out_metas.append(TensorMeta.of(leaf))
                call.outputs.append(OutLeaf("result", index=returned[ref]))
            else:
                self.fail("returns a tensor it did not compute")
        if not call.out_metas:
            self.fail("computes no tensor it returns")
        call.ops = len(self.entries)
        cls = type(call.module)
        call.digest = _hash([
            cls.__module__, cls.__qualname__, str(call.in_spec),
            [self.norm(v) if not isinstance(v, torch.Tensor) else ("tensor",)
             for v in call.leaves],
            call.in_metas, _aliases(call), call.weights, call.weight_metas, self.entries,
            [(o.kind, o.index, o.name, _plain(o.value)) for o in call.outputs],
            str(call.out_spec), call.out_metas,
        ])
        self.entries = []  # the digest holds them now


def _aliases(call: BlockCall) -> list[int]:
    """For each tensor input, the first input that is the same tensor."""
    tensors = [call.leaves[p] for p in call.tensor_at]
    return [next(j for j, u in enumerate(tensors) if u is t) for t in tensors]




class Recorder(TorchDispatchMode):
    """Writes down the ops of the open block call (entered only while one runs)."""

    def __init__(self, call: OpenCall) -> None:
        super().__init__()
        self.call = call

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        entry = self.call.op(func, tuple(args), dict(kwargs))
        out = func(*args, **kwargs)
        self.call.produced(entry, out)
        return out


def new_call(module: torch.nn.Module, path: str, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> BlockCall:
    """A call's record before it runs: its inputs and their key."""
    leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
    tensor_at = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    call = BlockCall(module=module, path=path, in_spec=spec, leaves=leaves, tensor_at=tensor_at,
                     in_metas=[TensorMeta.of(leaves[i]) for i in tensor_at],
                     call_key=call_key(module, args, kwargs))
    if not tensor_at:
        call.problem = "takes no tensor"
    return call


__all__ = ["BlockCall", "OpenCall", "OutLeaf", "Recorder", "TensorMeta", "attribute", "call_key",
           "new_call", "rebuild_output"]

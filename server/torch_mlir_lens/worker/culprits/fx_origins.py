"""Which Python call produced an op of the Torch IR: its FX node, found by its whole call chain.

The FX importer builds each op's location from its FX node's stack trace, every frame of it
(library frames included), so an op and the node it comes from share one call chain:
`upsampling.py:175 ← unet_2d_blocks.py:2570 ← unet_2d_condition.py:1219 ← model.py:16`. A
user line that calls a whole library model holds thousands of nodes; the chain holds the one
`F.interpolate`. The node found so, never a neighbour on the same line, names the call:

- the node's own op: the op is what the call produced (named after the op, `aten.fmod`);
- the node's op came from another one in torch.export (its `from_node` root): a decomposition
  when that root made several nodes or took other arguments (`Tensor.real` → `view_as_real`
  and `select`), an alias when it made this one node with the same signature and torch's
  docs call the two one op (`torch.special.erfinv` → `aten.erfinv`; `Tensor.reshape` →
  `aten.view` is a decomposition that made one op: op_aliases.py);
- no node at the chain has the op: torch-mlir rewrote a node that is gone from the IR at that
  chain (`torch.roll` → `aten.slice.Tensor`, `aten.cat`; `F.interpolate`'s
  `upsample_nearest2d` → `aten.__interpolate`): a decomposition, or the same op under another
  overload (`aten.add.Tensor` → `aten.add.Scalar`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

from torch_mlir_lens.rules.culprits import short_op
from torch_mlir_lens.worker.ir import op_aliases
from torch_mlir_lens.worker.ir.locations import LocationResolver
from torch_mlir_lens.worker.shims.region_origins import REGION_SOURCE, REGION_WRAPPERS

_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")

Chain = tuple[tuple[str, int], ...]  # every frame of a call, innermost first

SAME = "same"  # the op is the node's own, as the call produced it
ALIAS = "alias"  # another name of the same op (`torch.special.erfinv` is `aten.erfinv`)
OVERLOAD = "overload"  # the same op under another overload (`add.Tensor` → `add.Scalar`)
DECOMPOSED = "decomposed"  # one of the ops a decomposition made of the call
IMPORTED = "imported"  # made by torch-mlir's FX importer for a higher-order op (`while_loop`)

# Higher-order ops → the ops torch-mlir's FX importer writes for them, besides their bodies'
# (`FxImporter._import_hop_while_loop`: the loop, and a `Bool.Tensor` per condition).
_IMPORTED_HOPS = {"while_loop": ("torch.prim.Loop", "aten.Bool.Tensor")}


@dataclass
class FxCall:
    """An FX node of the exported program, with the Python call that produced it."""

    op: str  # "aten.roll"
    origin: str  # the op before torch.export's decompositions ("aten.special_erfinv")
    call: str  # "torch.roll", "F.interpolate", "Tensor.scatter_add", or the origin op
    how: str = SAME  # how `op` came from `origin`: SAME, ALIAS, DECOMPOSED or IMPORTED


@dataclass
class Origin:
    """How to name a rejected op: the call, and how the op came from it."""

    call: str  # "F.interpolate", or the op itself ("aten.erfinv")
    how: str  # SAME, ALIAS, OVERLOAD, DECOMPOSED or IMPORTED


def overload_free(target: str) -> str:
    """`aten.erfinv.default` → `aten.erfinv` (other overloads are kept: `aten.add.Scalar`)."""
    return target[: -len(".default")] if target.endswith(".default") else target


def _imported_as() -> dict[str, str]:
    """FX ops the FX importer writes as another op (`aten.sym_size.int` → `aten.size.int`)."""
    try:
        from torch_mlir.extras.fx_importer import SYMBOLIC_OP_TO_TORCH_OP
    except ImportError:
        return {}
    return {overload_free(str(k)): overload_free(str(v))
            for k, v in SYMBOLIC_OP_TO_TORCH_OP.items() if not isinstance(k, tuple)}


def _base(op: str) -> str:
    """`aten.add.Scalar` → `aten.add`."""
    parts = op.split(".")
    return ".".join(parts[:2]) if parts[0] in ("aten", "prim") else op


def _root(node: Any) -> Any | None:
    """The earliest node `node` was made from (None: it is its own), through `from_node`.

    A node inlined from a `no_grad` / autocast region comes from the region's node that
    region_origins found; a wrapper it could not follow made none of the region's ops."""
    region_source = node.meta.get(REGION_SOURCE)
    if region_source is not None:
        return region_source
    sources = node.meta.get("from_node") or []
    source = sources[-1] if sources else None
    root = None
    while source is not None:
        if str(getattr(source, "target", "")) not in REGION_WRAPPERS:
            root = source  # the earliest source that is a call, not a region's wrapper
        source = source.from_node[-1] if getattr(source, "from_node", None) else None
    return root


def _signature(op: Any) -> tuple[list[str], list[str]] | None:
    """Argument and return types of an op overload (names left out), if known."""
    schema = getattr(op, "_schema", None)
    if schema is None:
        return None
    return [str(a.type) for a in schema.arguments], [str(r.type) for r in schema.returns]


def _overload(target: str) -> Any | None:
    """`aten.special_erfinv.default` → torch.ops.aten.special_erfinv.default."""
    import torch

    parts = target.split(".")
    if len(parts) != 3:
        return None
    packet = getattr(getattr(torch.ops, parts[0], None), parts[1], None)
    return getattr(packet, parts[2], None) if packet is not None else None


# Python's indexing dunders, named as the user wrote them.
_INDEXING = {"__getitem__": "Tensor[...]", "__setitem__": "Tensor[...] ="}


def _call_text(node: Any, op: str) -> str:
    """How the user wrote the call: `torch.fft.fft`, `F.interpolate`, `Tensor.scatter_add`."""
    torch_fn = node.meta.get("torch_fn")
    full = torch_fn[1] if torch_fn else ""
    if full.startswith("OpOverload."):  # torch's own call of an op (torch.export's checks)
        return op
    kind, _, name = full.rpartition(".")
    if name in _INDEXING:  # `edge_index[:, mask]`, `x[:n]`, `out[idx] = v`
        return _INDEXING[name]
    if name.startswith("__"):  # a property such as `.real` (`__get__`): name the aten op
        return f"Tensor.{_base(op).rsplit('.', 1)[-1]}"
    if not name:
        return op
    if kind.startswith("method"):
        return f"Tensor.{name}"
    code = (node.meta.get("stack_trace") or "").strip().splitlines()
    text = code[-1] if code else ""
    for m in _CALL.finditer(text):
        dotted = m.group(1)
        if dotted.split(".")[-1] == name or dotted.replace(".", "_").endswith(name):
            return dotted
    return _public_name(kind, name)


def _public_name(kind: str, name: str) -> str:
    """The documented name of a torch function known only by its `torch_fn` (the call is not
    on the innermost recorded line: it is in a library helper, which non-strict export leaves
    out of stack traces): `special_erfinv` → `torch.special.erfinv`, the Python function
    `interpolate` → `F.interpolate`."""
    import torch
    import torch.nn.functional as F

    head, _, rest = name.partition("_")
    if head in op_aliases.NAMESPACES and rest and hasattr(getattr(torch, head, None), rest):
        return f"torch.{head}.{rest}"
    if hasattr(F, name) and (kind == "function" or not hasattr(torch, name)):
        return f"F.{name}"  # F.interpolate (Python), F.linear (torch._C._nn's builtin)
    return f"torch.{name}"


def node_chain(node: Any) -> Chain:
    """The frames of an FX node's stack trace, innermost first (as its op's location)."""
    frames = _FILE_LINE.findall(node.meta.get("stack_trace") or "")
    return tuple((f, int(n)) for f, n in reversed(frames))


class FxCalls:
    """The aten calls of an exported program, by call chain."""

    def __init__(self, program: Any) -> None:
        nodes = [n for n in program.graph.nodes
                 if n.op == "call_function" and str(n.target).startswith("aten.")]
        roots = {id(n): _root(n) for n in nodes}
        made = Counter(self._root_key(r) for r in roots.values() if r is not None)
        renamed = _imported_as()
        self.by_chain: dict[Chain, list[FxCall]] = {}
        for node in nodes:
            op = overload_free(str(node.target))
            op = renamed.get(op, op)
            root = roots[id(node)]
            target = str(getattr(root, "target", "") or "")
            origin = overload_free(target) if target else op
            how = SAME
            if origin != op:
                how = ALIAS if self._is_alias(node, root, target, made) else DECOMPOSED
            call = FxCall(op, origin, _call_text(node, origin), how)
            self.by_chain.setdefault(node_chain(node), []).append(call)
        for node in program.graph.nodes:
            hop = getattr(node.target, "namespace", None) == "higher_order" and str(node.target)
            for op in _IMPORTED_HOPS.get(hop or "", ()):
                call = FxCall(op, f"higher_order.{hop}", str(hop), IMPORTED)
                self.by_chain.setdefault(node_chain(node), []).append(call)

    def merge(self, other: FxCalls) -> None:
        """Add the calls of another program's graph (a stitched block's function)."""
        for chain, calls in other.by_chain.items():
            self.by_chain.setdefault(chain, []).extend(calls)

    @classmethod
    def _is_alias(cls, node: Any, root: Any, target: str, made: Counter[tuple[str, int]]) -> bool:
        """The call made only this node, with its signature, and torch documents the two ops
        as one (`Tensor.reshape` → `aten.view` is a decomposition that made one op)."""
        signature = _signature(node.target)
        return (made[cls._root_key(root)] == 1 and signature is not None
                and signature == _signature(_overload(target))
                and op_aliases.are_aliases(target, str(node.target)))

    @staticmethod
    def _root_key(root: Any) -> tuple[str, int]:
        """A source node's identity (a NodeSource, or a region_origins.RegionSource)."""
        return str(getattr(root, "name", "")), int(getattr(root, "graph_id", 0) or 0)

    def origin(self, op: str, chain: Chain, ir_ops: set[str],
               rewrites: TorchRewrites | None = None) -> Origin:
        """How to name `op` (short name, "aten.cat") made at `chain`; `ir_ops`: the short
        names of every op of the Torch IR at that chain. With `rewrites`, a call gone from the
        IR is named only if torch-mlir, given that call alone, makes `op`."""
        calls = self.by_chain.get(chain, [])
        match = next((c for c in calls if c.op == op), None)
        if match is not None:
            if match.how == SAME:
                return Origin(op, SAME)
            return Origin(match.call, match.how)
        vanished = [c for c in calls if c.op not in ir_ops]
        if rewrites is not None and vanished:
            tried = [(c, rewrites.makes(c.op, chain, op)) for c in vanished]
            # A call that could not be tried stays a candidate only if it is the only one.
            vanished = [c for c, made in tried if made or (made is None and len(tried) == 1)]
        same_op = next((c for c in vanished if _base(c.op) == _base(op)), None)
        if same_op is not None:
            return Origin(same_op.call, OVERLOAD)
        if vanished:
            return Origin(vanished[0].call, DECOMPOSED)
        return Origin(op, SAME)


class TorchRewrites:
    """What torch-mlir's Torch pipeline makes of one op of the raw (just imported) IR: the op
    copied out alone, the pipeline run on it, the ops left (cached per op and types)."""

    _made: ClassVar[dict[str, frozenset[str] | None]] = {}  # op key → short op names made

    def __init__(self, raw_module: Any, resolver: LocationResolver) -> None:
        self.raw_module = raw_module
        self.resolver = resolver
        self._at: dict[tuple[Chain, str], list[Any]] | None = None

    def _index(self) -> dict[tuple[Chain, str], list[Any]]:
        if self._at is None:
            from torch_mlir import ir

            at: dict[tuple[Chain, str], list[Any]] = {}

            def visit(op: Any) -> Any:
                name = short_op(str(op.operation.name))
                chain = first_chain(self.resolver, str(op.location))
                if chain:
                    at.setdefault((chain, name), []).append(op)
                return ir.WalkResult.ADVANCE

            self.raw_module.operation.walk(visit)
            self._at = at
        return self._at

    def makes(self, call_op: str, chain: Chain, op: str) -> bool | None:
        """Whether an op `call_op` of the raw IR at `chain`, alone, becomes ops among which
        is `op` (None when no such raw op is found or none could be tried)."""
        verdict: bool | None = None
        for raw in self._index().get((chain, call_op), []):
            made = self._made_by(raw)
            if made is not None:
                if op in made:
                    return True
                verdict = False
        return verdict

    def _made_by(self, raw: Any) -> frozenset[str] | None:
        from torch_mlir import ir
        from torch_mlir.passmanager import PassManager

        from torch_mlir_lens.rules.targets import TORCH_BACKEND_PIPELINE
        from torch_mlir_lens.worker.culprits import op_isolation
        from torch_mlir_lens.worker.ir.mlir_diagnostics import captured

        key = op_isolation.isolation_key(raw)
        if key not in self._made:
            made: frozenset[str] | None = None
            try:
                small = op_isolation.isolate(raw)
                with small.context, captured(small.context):
                    PassManager.parse(TORCH_BACKEND_PIPELINE).run(small.operation)
                names: set[str] = set()

                def visit(op: Any) -> Any:
                    names.add(short_op(str(op.operation.name)))
                    return ir.WalkResult.ADVANCE

                small.operation.walk(visit)
                made = frozenset(names)
            except (RuntimeError, ValueError, KeyError, ir.MLIRError):
                made = None
            if len(self._made) > 4096:
                self._made.clear()
            self._made[key] = made
        return self._made[key]


def ir_ops_by_chain(module_op: Any, resolver: LocationResolver) -> dict[Chain, set[str]]:
    """The short names of the ops of a module at each call chain (the first of its location)."""
    from torch_mlir import ir

    out: dict[Chain, set[str]] = {}

    def visit(op: Any) -> Any:
        chain = first_chain(resolver, str(op.location))
        if chain:
            out.setdefault(chain, set()).add(short_op(str(op.operation.name)))
        return ir.WalkResult.ADVANCE

    module_op.operation.walk(visit)
    return out


def first_chain(resolver: LocationResolver, location: str) -> Chain:
    """Every frame of the first call stack of a location text, innermost first."""
    chains = resolver.all_chains(location)
    return tuple(chains[0]) if chains else ()


__all__ = ["ALIAS", "DECOMPOSED", "IMPORTED", "OVERLOAD", "SAME", "Chain", "FxCall", "FxCalls",
           "Origin", "TorchRewrites",
           "first_chain", "ir_ops_by_chain", "node_chain", "overload_free"]

"""The exported program's ATen graph as the graph view's nodes, edges and groups.

Each `call_function` node is a graph node at the innermost line of the user's files in its
stack trace, with the innermost library line when the op was made in library code. Its
`nn_module_stack` gives its groups (`blocks.0 · Block` inside the root). Ops one Python call
decomposed into (`F.linear` → view, permute, mm, ...) form a "call" group inside their module
when they are not the whole of it. A stitched program (worker/blocks/) shows each block call,
or each chain of calls, as one node pointing at its group's function, whose ops are walked
once under a "block" group. `getitem` nodes are folded into the op they select from; weights
are not nodes.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from torch_mlir_lens.protocol.graph import DTYPES, GraphEdge, GraphGroup, GraphNode, SourceLine
from torch_mlir_lens.worker.blocks.stub import NAMESPACE
from torch_mlir_lens.worker.ir.library_frames import library_files
from torch_mlir_lens.worker.ir.locations import UserFiles

_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class FxGraph:
    """Nodes, edges and groups, in the program's order."""

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    groups: list[GraphGroup] = field(default_factory=list)
    # The Python call each op comes from (node id → (call name, function)): the call groups.
    calls: dict[str, tuple[str, str]] = field(default_factory=dict)


def value_type(val: Any) -> tuple[list[int | str] | None, str | None]:
    """(shape, dtype) of a node's value: its first tensor's (a SymInt size as text)."""
    if isinstance(val, list | tuple):
        val = next((v for v in val if hasattr(v, "shape")), None)
    if val is None or not hasattr(val, "shape") or not hasattr(val, "dtype"):
        return None, None
    shape = [d if isinstance(d, int) else str(d) for d in val.shape]
    dtype = str(val.dtype).removeprefix("torch.")
    return shape, DTYPES.get(dtype, dtype)


def type_text(shape: list[int | str] | None, dtype: str | None) -> str:
    """`f32[2, 32]` (an edge's type)."""
    if shape is None:
        return dtype or ""
    return f"{dtype or '?'}[{', '.join(str(d) for d in shape)}]"


class _Walker:
    """Walks one ATen graph (the parent's, or a block function's) into an FxGraph."""

    def __init__(self, out: FxGraph, users: UserFiles, prefix: str, root: str | None,
                 blocks: dict[int, tuple[str, Any]]) -> None:
        self.out = out
        self.users = users
        self.libraries = library_files()
        self.prefix = prefix  # node ids of a block function: "b1:"
        self.root = root  # the group every node of this graph is in (a block's), or None
        self.blocks = blocks  # kernel number → (its block group, StitchedBlock)
        self.ids: dict[Any, str] = {}  # fx node → graph node id (getitem → its source's)
        self.vals: dict[Any, Any] = {}  # fx node → the value it passes along
        self.group_ids: dict[str, str] = {g.id: g.id for g in out.groups}

    def walk(self, graph: Any, user_inputs: set[str]) -> None:
        for fx in graph.nodes:
            if fx.op == "placeholder":
                if fx.name in user_inputs:
                    self._node(fx, "input", group=self.root)
            elif fx.op == "call_function":
                if fx.target is operator.getitem and fx.args and fx.args[0] in self.ids:
                    self.ids[fx] = self.ids[fx.args[0]]
                    self.vals[fx] = fx.meta.get("val")
                    continue
                self._op(fx)
            elif fx.op == "output":
                self._node(fx, "output", group=self.root, val=_output_vals(fx))

    def _op(self, fx: Any) -> None:
        target = str(getattr(fx.target, "name", lambda: None)() or fx.target)
        namespace = target.split("::", 1)[0] if "::" in target else target.split(".", 1)[0]
        if namespace == NAMESPACE or target.startswith(f"{NAMESPACE}."):
            self._block_call(fx)
            return
        op = target.replace("::", ".")
        group = self._module_group(fx)
        node = self._node(fx, op, group=group)
        call = fx.meta.get("torch_fn")
        if isinstance(call, tuple) and call:
            self.out.calls[node.id] = (str(call[0]), str(call[1]) if len(call) > 1 else "")

    def _block_call(self, fx: Any) -> None:
        number = fx.args[0] if fx.args and isinstance(fx.args[0], int) else None
        group, block = self.blocks.get(number, (None, None)) if number is not None else (
            None, None)
        paths = _site_paths(block, fx) if block is not None else []
        stack = list((fx.meta.get("nn_module_stack") or {}).values())
        # The call sits in the module holding the blocks, not in the first block itself.
        node = self._node(fx, "block", group=self._module_group(fx, stack[:-1]))
        node.block = group
        paths = [p for p in paths if p]
        if paths:
            node.name = paths[0] if len(paths) == 1 else f"{paths[0]} … {paths[-1]}"

    def _module_group(self, fx: Any, stack: list[Any] | None = None) -> str | None:
        if stack is None:
            stack = list((fx.meta.get("nn_module_stack") or {}).values())
        parent = self.root
        for entry in stack:
            path, cls = (entry[0], entry[1]) if isinstance(entry, tuple) else ("", "")
            if not path:
                continue
            gid = f"{self.prefix}m:{path}"
            if gid not in self.group_ids:
                parent_path = next((g.path for g in self.out.groups if g.id == parent), "")
                short = path[len(parent_path) + 1:] if parent_path and path.startswith(
                    parent_path + ".") else path
                cls_name = str(cls).rsplit(".", 1)[-1]
                self.out.groups.append(GraphGroup(id=gid, name=f"{short} · {cls_name}",
                                                  parent=parent, path=path, cls=cls_name))
                self.group_ids[gid] = gid
            parent = gid
        return parent

    def _node(self, fx: Any, op: str, *, group: str | None, val: Any = None) -> GraphNode:
        val = fx.meta.get("val") if val is None else val
        shape, dtype = value_type(val)
        node = GraphNode(id=f"{self.prefix}{fx.name}", op=op, name=fx.name, group=group,
                         shape=shape, dtype=dtype)
        self._locate(node, fx.meta.get("stack_trace") or "")
        for src in fx.all_input_nodes:
            source = self.ids.get(src)
            if source is not None:
                s_shape, s_dtype = value_type(self.vals.get(src))
                self.out.edges.append(GraphEdge(source, node.id, type_text(s_shape, s_dtype)))
        self.ids[fx] = node.id
        self.vals[fx] = val
        self.out.nodes.append(node)
        return node

    def _locate(self, node: GraphNode, trace: str) -> None:
        frames = [(f, int(n)) for f, n in _FILE_LINE.findall(trace)]  # outermost first
        inner = max((i for i, fr in enumerate(frames) if fr[0] in self.users), default=-1)
        if inner >= 0:
            node.file, node.line = frames[inner]
        library = [fr for fr in frames[inner + 1:] if self.libraries.is_library(fr[0])]
        if library:  # made in library code: the innermost library line below the user's
            node.library_line = SourceLine(*library[-1])


def _output_vals(fx: Any) -> Any:
    args = fx.args[0] if fx.args else None
    return args[0].meta.get("val") if isinstance(args, list | tuple) and args and hasattr(
        args[0], "meta") else None


def _site_paths(block: Any, fx: Any) -> list[str]:
    """The blocks a call (op args: group, site, ...) or chain (group, first site, count, ...)
    runs, by their paths in the model."""
    kernel = block.kernel
    try:
        first = int(fx.args[1])
        count = int(fx.args[2]) if "chain" in str(fx.target) else 1
        return [kernel.paths.get(id(kernel.sites[s][0]), "") for s in range(first, first + count)]
    except (IndexError, KeyError, TypeError, ValueError):
        return list(block.paths)


def _call_groups(out: FxGraph) -> None:
    """Ops of one Python call (at least two) grouped inside their module, unless they are all
    of it."""
    calls = out.calls
    members: dict[tuple[str | None, str], list[GraphNode]] = {}
    for node in out.nodes:
        made_by = calls.get(node.id)
        if made_by is not None:
            members.setdefault((node.group, made_by[0]), []).append(node)
    per_group = Counter(n.group for n in out.nodes)
    has_children = {g.parent for g in out.groups}
    for (group, call), nodes in members.items():
        if len(nodes) < 2 or (group is not None and len(nodes) == per_group[group]
                              and group not in has_children):
            continue
        gid = f"{group or ''}/c:{call}"
        function = calls[nodes[0].id][1].rsplit(".", 1)[-1] or call
        out.groups.append(GraphGroup(id=gid, name=function, kind="call", parent=group,
                                     line=nodes[0].line))
        for node in nodes:
            node.group = gid


def fx_graph(program: Any, users: UserFiles) -> FxGraph:
    """The graph of an exported program, or of a stitched one (its blocks' functions once)."""
    out = FxGraph()
    stitched = getattr(program, "is_stitched", False)
    parent = program.parent if stitched else program
    blocks: dict[int, tuple[str, Any]] = {}
    for index, block in enumerate(program.blocks if stitched else [], start=1):
        gid = f"b{index}:{block.symbol}"
        out.groups.append(GraphGroup(
            id=gid, name=f"@{block.symbol} · {block.class_name} ×{block.calls or len(block.paths)}",
            kind="block", cls=block.class_name, paths=list(block.paths)))
        blocks[block.kernel.number] = (gid, block)
    _Walker(out, users, "", None, blocks).walk(parent.graph, _user_inputs(parent))
    for index, block in enumerate(program.blocks if stitched else [], start=1):
        gid = f"b{index}:{block.symbol}"
        traced = block.traced.program
        _Walker(out, users, f"b{index}:", gid, blocks).walk(
            traced.graph, _block_inputs(traced, block))
    _call_groups(out)
    return out


def _user_inputs(program: Any) -> set[str]:
    signature = getattr(program, "graph_signature", None)
    return set(getattr(signature, "user_inputs", ()) or ())


def _block_inputs(traced: Any, block: Any) -> set[str]:
    """A block function's own inputs: its user inputs less the weights passed after them."""
    inputs = [n.name for n in traced.graph.nodes if n.op == "placeholder"
              and n.name in _user_inputs(traced)]
    sites = getattr(block.kernel, "sites", {})
    weights = len(next(iter(sites.values()))[1]) if sites else 0
    return set(inputs[:len(inputs) - weights] if weights else inputs)

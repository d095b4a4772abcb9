"""The values that reach an op on the example inputs, and the op cut out as a small program.

    nodes_of(program, culprit, line)    → the FX nodes of the op a culprit names (at its line
                                          first, else anywhere)
    region(node, scope)                 → the nodes a rewrite acts on around one of them
    node_values(program, names, args)   → name → value, the program run on the inputs
    cut(nodes)                          → Cut: a GraphModule of those nodes alone and the
                                          outside nodes it takes as inputs

The program is run node by node (torch.fx.Interpreter) as exported, after the FX import froze
it (its weights are then attributes of the graph and its inputs only the user's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.utils._pytree as pytree

from torch_mlir_lens.worker.rewrites.table import EMPTY_REGION, mlir_name

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _calls(program: Any) -> list[Any]:
    return [n for n in program.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload)]


def _innermost_line(node: Any, file: str | None) -> tuple[str, int] | None:
    frames = [(f, int(n)) for f, n in _FRAME.findall(node.meta.get("stack_trace") or "")
              if file is None or f == file]
    return frames[-1] if frames else None


def nodes_of(program: Any, culprit: str, file: str | None = None,
             line: int | None = None, anywhere: bool = True) -> list[Any]:
    """The call nodes of the op `culprit` names (`aten.erfinv`): those whose innermost frame
    in `file` is `line` when there are some, else (`anywhere`) all of them."""
    name = culprit.removeprefix("torch.")
    found = [n for n in _calls(program) if mlir_name(n.target) == name]
    if file is not None and line is not None:
        here = [n for n in found if (_innermost_line(n, file) or ("", 0))[1] == line]
        if here or not anywhere:
            return here
    return found


def calls_at(program: Any, file: str | None, line: int | None) -> list[str]:
    """The ops (Torch dialect names) of the calls made at `file:line`, in program order."""
    if file is None or line is None:
        return []
    return list(dict.fromkeys(mlir_name(n.target) for n in _calls(program)
                              if (_innermost_line(n, file) or ("", 0))[1] == line))


def _empty(node: Any) -> bool:
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and any(
        isinstance(s, int) and s == 0 for s in value.shape)


def region(node: Any, scope: str) -> list[Any]:
    """The nodes around `node` a rewrite of this scope acts on, in graph order: the node
    alone, or (EMPTY_REGION) the zero-sized values connected to it and their users."""
    if scope != EMPTY_REGION:
        picked = {node}
    else:
        picked, todo = set(), [node]
        while todo:  # the empty values connected to it, through producers and users
            n = todo.pop()
            if n in picked:
                continue
            picked.add(n)
            if _empty(n):
                todo += [u for u in n.users if u.op == "call_function"]
                todo += [a for a in n.all_input_nodes if a.op == "call_function" and _empty(a)]
        picked |= {u for n in list(picked) if _empty(n) for u in n.users
                   if u.op == "call_function"}
    # A node making a tuple comes with the getitem nodes that take its parts.
    picked |= {u for n in list(picked) for u in n.users
               if u.op == "call_function" and not isinstance(u.target, torch._ops.OpOverload)
               and isinstance(n.meta.get("val"), tuple | list)}
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    return sorted(picked, key=order.__getitem__)


@dataclass
class Cut:
    """Some nodes of a program as a program of their own."""

    module: torch.fx.GraphModule
    inputs: list[Any]  # the outside nodes it takes, in placeholder order
    outputs: list[Any]  # the nodes whose values it returns


def cut(nodes: Sequence[Any]) -> Cut | None:
    """The nodes as a GraphModule taking the tensors they use from outside and returning the
    tensors used outside (or by nothing); None when an outside value is not a tensor (a
    symbolic size: not tried alone)."""
    graph = torch.fx.Graph()
    inside = set(nodes)
    env: dict[Any, Any] = {}
    inputs: list[Any] = []

    def outside(n: Any) -> Any:
        if n not in env:
            if not isinstance(n.meta.get("val"), torch.Tensor) and n.op != "get_attr":
                raise _NotATensor
            env[n] = graph.placeholder(f"input_{len(inputs)}")
            env[n].meta = {k: v for k, v in n.meta.items() if k == "val"}
            inputs.append(n)
        return env[n]

    try:
        for n in nodes:
            env[n] = graph.node_copy(n, lambda a: env[a] if a in inside else outside(a))
    except _NotATensor:
        return None
    outputs = [n for n in nodes if isinstance(n.meta.get("val"), torch.Tensor)
               and (not n.users or any(u not in inside for u in n.users))]
    if not outputs:
        return None
    graph.output(tuple(env[n] for n in outputs))
    return Cut(torch.fx.GraphModule(torch.nn.Module(), graph), inputs, outputs)


class _NotATensor(Exception):
    pass


def runnable(program: Any, n_inputs: int) -> torch.fx.GraphModule:
    """The program's graph taking just the user's inputs (as divergence.py runs it)."""
    gm = program.graph_module
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return gm if len(placeholders) == n_inputs else program.module()


def node_values(program: Any, names: Iterable[str], args: Sequence[Any],
                kwargs: dict[str, Any]) -> dict[str, Any]:
    """name → the value of each named node when the program runs on the inputs."""
    wanted = set(names)
    flat = pytree.tree_leaves((tuple(args), dict(kwargs)))
    gm = runnable(program, len(flat))
    found: dict[str, Any] = {}

    class _Recorder(torch.fx.Interpreter):
        def run_node(self, node: torch.fx.Node) -> Any:
            value = super().run_node(node)
            if node.name in wanted:
                found[node.name] = pytree.tree_map(
                    lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v, value)
            return value

    with torch.no_grad():
        _Recorder(gm).run(*flat)
    for name in wanted - set(found):  # a lifted parameter, buffer or constant: by its name
        value = _lifted(program, name)
        if value is not None:
            found[name] = value
    return found


def _lifted(program: Any, name: str) -> Any:
    """The value of a placeholder standing for a parameter, buffer or constant (the program
    as torch.export made it, before the import froze them in)."""
    signature = program.graph_signature
    for table in (signature.inputs_to_parameters, signature.inputs_to_buffers,
                  getattr(signature, "inputs_to_lifted_tensor_constants", {})):
        target = table.get(name)
        if target is not None:
            value = program.state_dict.get(target)
            if value is None:
                value = program.constants.get(target)
            return value.detach().clone() if isinstance(value, torch.Tensor) else value
    return None


__all__ = ["Cut", "calls_at", "cut", "node_values", "nodes_of", "region", "runnable"]

"""Frozen tensors inside tensor lists: handed to the importer as attributes, not as tensors.

torch-mlir 20261001's `FxImporter.import_frozen_program` freezes each lifted parameter, buffer
and tensor constant by replacing every use of its placeholder with the tensor itself. A use
inside a list argument then holds a `torch.Tensor` where `_import_list_argument` accepts only
graph nodes (or scalars), and the import fails: "Heterogeneous lists are not supported:
expected vtensor, got <class 'torch.Tensor'>". `transformers`' Swin indexes its
relative-position table with a buffer (`aten.index.Tensor(table, [relative_position_index])`),
so every Swin-like model hits it (python/torch_mlir/extras/fx_importer.py, unchanged on
llvm/torch-mlir main as of 2026-08).

The same function does import `get_attr` nodes inside lists, as literals of the module's
attribute. `attributes_for_list_uses` gives each such lifted value an attribute of the graph
module and points the list uses at a `get_attr` node reading it; every other use stays the
placeholder the importer freezes. Drop this module when a pinned torch-mlir imports tensors in
lists (a Swin then imports without it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch.fx import Node
from torch.fx.node import map_aggregate

ATTR_PREFIX = "_lens_list_constant_"


def _in_a_list(node: Node, user: Node) -> bool:
    """Whether `node` is an element of a list or tuple argument of `user`."""
    def holds(value: Any) -> bool:
        if isinstance(value, list | tuple):
            return any(v is node or holds(v) for v in value)
        if isinstance(value, dict):
            return any(holds(v) for v in value.values())
        return False

    return any(holds(a) for a in (*user.args, *user.kwargs.values())
               if isinstance(a, list | tuple | dict))


def _swap_in_lists(value: Any, old: Node, new: Node) -> Any:
    """`value` (a node argument) with `old` replaced by `new` inside lists and tuples only."""
    if isinstance(value, list | tuple):
        return map_aggregate(value, lambda v: new if v is old else v)
    return value


def attributes_for_list_uses(program: Any, state: Mapping[str, Any]) -> int:
    """Point each use of a lifted value inside a list at a `get_attr` node of it (in place);
    `state` maps state names (parameters, buffers, constants) to tensors. How many uses."""
    signature = program.graph_signature
    lifted = {**signature.inputs_to_parameters, **signature.inputs_to_buffers,
              **getattr(signature, "inputs_to_lifted_tensor_constants", {})}
    graph, module = program.graph, program.graph_module
    changed = 0
    for index, node in enumerate(list(graph.nodes)):
        if node.op != "placeholder" or node.name not in lifted:
            continue
        value = state.get(lifted[node.name])
        # Only calls: the output node's tuple is the importer's own to read (a returned
        # buffer must stay the frozen tensor, or `main` declares that result `none`).
        users = [u for u in node.users if u.op == "call_function" and _in_a_list(node, u)]
        if value is None or not users:
            continue
        attr = f"{ATTR_PREFIX}{index}"
        setattr(module, attr, value)
        for user in users:
            with graph.inserting_before(user):
                getter = graph.get_attr(attr)
            user.args = tuple(_swap_in_lists(a, node, getter) for a in user.args)
            user.kwargs = {k: _swap_in_lists(v, node, getter) for k, v in user.kwargs.items()}
            changed += 1
    return changed


__all__ = ["attributes_for_list_uses"]

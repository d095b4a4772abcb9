"""Give the ops of a `no_grad` / autocast region back the user's line and call.

torch.export wraps such a region (a `@torch.no_grad()` helper, `with torch.autocast(...)`) in a
higher-order op whose body is a subgraph; the subgraph's nodes keep the user's stack trace and
call (`torch.special.erfinv` at `rotary.py:42`). `run_decompositions` inlines the body, and the
inlined nodes lose both: their stack trace is the generated code of the subgraph

    File "<eval_with_key>.59", line 7, in forward
        special_erfinv = torch.ops.higher_order.wrap_with_autocast(..., submod_2, add)
    File "<eval_with_key>.60", line 5, in forward
        special_erfinv = torch.ops.aten.special_erfinv.default(add)

and their source (`torch_fn`, `from_node`) is the wrapper. The FX importer would then place the
op at no user line (or the helper's caller), and the culprit would name the wrapper.

The generated frames name, subgraph by subgraph, the node each inlined node comes from. This
module follows them through the program as exported (before the decompositions) and copies
that node's stack trace and call back, and records which node it was as the op's origin
(`REGION_SOURCE`), so fx_origins can tell an alias from a decomposition as elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Higher-order ops that only wrap a region: the decompositions inline their body.
REGION_WRAPPERS = frozenset({"wrap_with_set_grad_enabled", "wrap_with_autocast"})

# The node of the program as exported that an inlined node comes from (meta key).
REGION_SOURCE = "lens_region_source"


@dataclass(frozen=True)
class RegionSource:
    """A region body's node, by the fields torch's `NodeSource` has (no reference to the
    exported program, which the decomposed one must not keep alive)."""

    name: str
    target: str  # "aten.special_erfinv.default"
    graph_id: int


# One frame of generated FX code, with the node it assigns: `File "<eval_with_key>.7", line 5,
# in forward\n    add = torch.ops.aten.add.Tensor(x, 1)`.
_GENERATED_FRAME = re.compile(r'File "<eval_with_key>[^"]*", line \d+, in \w+\n\s*(\w+) = ')


def is_region_wrapper(target: Any) -> bool:
    """Whether an FX node target is a region's wrapper (`higher_order.wrap_with_autocast`)."""
    return str(getattr(target, "__name__", target)).rsplit(".", 1)[-1] in REGION_WRAPPERS


def _body(wrapper: Any) -> Any | None:
    """The GraphModule a region wrapper node runs (its `get_attr` argument)."""
    owner = wrapper.graph.owning_module
    for arg in wrapper.args:
        if getattr(arg, "op", None) == "get_attr" and owner is not None:
            module = getattr(owner, str(arg.target), None)
            if module is not None and hasattr(module, "graph"):
                return module
    return None


def _wrappers_by_name(program: Any) -> dict[str, Any]:
    """The region wrapper nodes of the program's top graph, by name."""
    return {n.name: n for n in program.graph.nodes
            if n.op == "call_function" and is_region_wrapper(n.target)}


def _source_in(wrapper: Any, names: list[str]) -> Any | None:
    """The node of `wrapper`'s body (nested regions followed) that the generated frames
    `names` (outermost first) lead to."""
    node = wrapper
    for name in names:
        body = _body(node) if is_region_wrapper(node.target) else None
        if body is None:
            return None
        node = next((n for n in body.graph.nodes if n.name == name), None)
        if node is None:
            return None
    return node if node is not wrapper else None


def restore_region_origins(exported: Any, decomposed: Any) -> int:
    """Copy onto each node of `decomposed` inlined from a region of `exported` the stack trace
    and call of the region's node it comes from; the number of nodes restored. `exported`
    must be the program `decomposed` was made from (its region bodies are read)."""
    wrappers = _wrappers_by_name(exported)
    if not wrappers:
        return 0
    restored = 0
    for node in decomposed.graph.nodes:
        if node.op != "call_function":
            continue
        sources = node.meta.get("from_node") or []
        wrapper = next((wrappers.get(s.name) for s in sources
                        if is_region_wrapper(getattr(s, "target", ""))), None)
        if wrapper is None:
            continue
        names = _GENERATED_FRAME.findall(node.meta.get("stack_trace") or "")
        source = _source_in(wrapper, names)
        if source is None and names[:1] == [wrapper.name]:  # a frame of the top graph too
            source = _source_in(wrapper, names[1:])
        if source is None:
            continue
        for key in ("stack_trace", "torch_fn"):
            if source.meta.get(key) is not None:
                node.meta[key] = source.meta[key]
        node.meta[REGION_SOURCE] = RegionSource(source.name, str(source.target),
                                                id(source.graph))
        restored += 1
    return restored


__all__ = ["REGION_SOURCE", "REGION_WRAPPERS", "RegionSource", "is_region_wrapper",
           "restore_region_origins"]

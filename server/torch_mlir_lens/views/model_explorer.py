"""A module's graph in Model Explorer's formats: the graph, and each backend's verdicts as
node data.

Model Explorer (google-ai-edge/model-explorer) opens a JSON file holding one graph collection
(`{"label", "graphs": [{"id", "nodes"}]}`); each node has a `label`, a `namespace` (its
groups as a path, `layers/3/attn`: the layers Model Explorer folds), `attrs` shown when it is
selected, its `incomingEdges` and its outputs' metadata. Its node data files
(`{graph id: {"results": {node id: {"value", "bgColor"}}}}`) colour the nodes by a value:
here one file per backend, the value naming the verdict. Torch-free; reads the graph as
`torch-mlir-lens graph --format json` writes it (protocol/graph.py).

    graph_collection(graph)          → the graph file's JSON
    node_data(graph, target)         → one backend's node data file's JSON
"""

from __future__ import annotations

from typing import Any

# The verdict's colour (the graph page's) and its value in node data, worst last.
STATUS_COLOURS = {"lowered": "#2e7d32", "rewritten": "#1565c0", "unknown": "#757575",
                  "knock-on": "#ef6c00", "rejected": "#c62828"}
STATUS_VALUES = {"lowered": 0, "rewritten": 1, "unknown": 2, "knock-on": 3, "rejected": 4}


def _namespaces(graph: dict[str, Any]) -> dict[str, str]:
    """Group id → its path of group names from the top (`layers/3/attn`)."""
    groups = {g["id"]: g for g in graph.get("groups") or []}
    paths: dict[str, str] = {}

    def path(gid: str, seen: frozenset[str] = frozenset()) -> str:
        if gid in paths:
            return paths[gid]
        group = groups.get(gid)
        if group is None or gid in seen:
            return ""
        own = str(group.get("path") or group.get("name") or gid).split(".")[-1] or gid
        parent = group.get("parent")
        above = path(parent, seen | {gid}) if parent else ""
        paths[gid] = f"{above}/{own}" if above else own
        return paths[gid]

    for gid in groups:
        path(gid)
    return paths


def _type(node: dict[str, Any]) -> str:
    shape, dtype = node.get("shape"), node.get("dtype")
    if shape is None:
        return str(dtype or "")
    return f"{dtype or '?'}[{', '.join(str(d) for d in shape)}]"


def _attrs(node: dict[str, Any]) -> list[dict[str, str]]:
    """What the side panel lists for a node: its name, lines and verdict per backend."""
    attrs = [{"key": "name", "value": str(node.get("name") or "")}]
    if node.get("line"):
        attrs.append({"key": "line", "value": f"{node.get('file') or ''}:{node['line']}"})
    library = node.get("library_line")
    if library:
        attrs.append({"key": "library line", "value": f"{library['file']}:{library['line']}"})
    for target, verdict in (node.get("targets") or {}).items():
        words = str(verdict.get("status") or "")
        if verdict.get("why"):
            words += f": {verdict['why']}"
        attrs.append({"key": target, "value": words})
    if node.get("verify"):
        attrs.append({"key": "verify", "value": str(node["verify"])})
    return attrs


def graph_collection(graph: dict[str, Any]) -> dict[str, Any]:
    """The graph as the JSON file Model Explorer opens (one collection, one graph); each node
    filled with the first target's verdict colour."""
    namespaces = _namespaces(graph)
    first = (graph.get("targets") or [None])[0]
    incoming: dict[str, list[dict[str, str]]] = {}
    for edge in graph.get("edges") or []:
        into = incoming.setdefault(str(edge["to"]), [])
        into.append({"sourceNodeId": str(edge["from"]), "sourceNodeOutputId": "0",
                     "targetNodeInputId": str(len(into))})
    nodes = []
    for node in graph.get("nodes") or []:
        status = ((node.get("targets") or {}).get(first) or {}).get("status") if first else None
        item: dict[str, Any] = {
            "id": str(node["id"]), "label": str(node.get("op") or node["id"]),
            "namespace": namespaces.get(node.get("group") or "", ""),
            "attrs": _attrs(node), "incomingEdges": incoming.get(str(node["id"]), []),
            "outputsMetadata": [{"id": "0", "attrs": [{"key": "type", "value": _type(node)}]}],
        }
        if status in STATUS_COLOURS:
            item["style"] = {"backgroundColor": STATUS_COLOURS[status]}
        nodes.append(item)
    return {"label": f"{graph.get('module', '')} (torch-mlir-lens)",
            "graphs": [{"id": str(graph.get("module") or "graph"), "nodes": nodes}]}


def node_data(graph: dict[str, Any], target: str) -> dict[str, Any]:
    """One backend's verdicts as Model Explorer's node data: each node's value (0 lowered,
    1 rewritten, 2 unknown, 3 knock-on, 4 rejected) and its colour."""
    results = {}
    for node in graph.get("nodes") or []:
        status = ((node.get("targets") or {}).get(target) or {}).get("status")
        if status in STATUS_VALUES:
            results[str(node["id"])] = {"value": STATUS_VALUES[status],
                                        "bgColor": STATUS_COLOURS[status]}
    return {str(graph.get("module") or "graph"): {"results": results}}


__all__ = ["STATUS_COLOURS", "STATUS_VALUES", "graph_collection", "node_data"]

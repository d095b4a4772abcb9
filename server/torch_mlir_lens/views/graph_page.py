"""The graph of one module as a self-contained page (`torch-mlir-lens graph -o graph.html`):
the graph view's script (its layout library inside) and the graph's JSON, inline. It opens in
any browser with no network, to attach to a bug report or send to a colleague."""

from __future__ import annotations

from typing import Any

from torch_mlir_lens.views.assets import graph_script
from torch_mlir_lens.views.html_page import page


def graph_html(graph: dict[str, Any]) -> str:
    """The page of `graph` (`ModuleGraph.to_json()`)."""
    script = graph_script()
    if "</script" in script.lower():
        raise ValueError("the graph view's script holds a closing script tag")
    title = f"{graph.get('module') or 'module'} · Torch-MLIR Lens graph"
    return page(title, "", scripts=(script,), data=graph)

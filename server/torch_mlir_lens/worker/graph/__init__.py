"""A module's computation graph for the graph view: the exported program's ATen ops grouped
by the module hierarchy, each at its lines, with its verdict per backend.

    fx_graph.py  the exported program (stitched or inline) → nodes, edges, groups
    ir_lines.py  the Torch IR lines each node became
    build.py     the `graph` job: export once, lower to Torch IR and each backend, assemble

The verdicts come from the lowerings' diagnostics through `rules/node_verdicts.py`, as
`check` reads them.
"""

"""Pages people look at: self-contained HTML that opens with no network (the module's graph,
the coverage report), each under a strict Content-Security-Policy.

    html_page.py  one page: its styles and scripts inline, allowed by their hashes alone
    assets.py     the graph view's script, built from client/graphPage/ with its layout library
    graph_page.py the graph of one module (`torch-mlir-lens graph -o graph.html`)
"""

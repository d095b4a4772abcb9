"""The graph view's page script, shipped in the package (`assets/graph_page.js`).

Built from `client/graphPage/` with its layout library (dagre, its licence at the top) by
`npm run build` (`make client`, which `make run` and `make test` run first); read through the
product's one reader of files.
"""

from __future__ import annotations

from pathlib import Path

from torch_mlir_lens.system.reading import SYSTEM_FILE, read_text

GRAPH_SCRIPT = Path(__file__).resolve().parent / "assets" / "graph_page.js"


class AssetMissing(Exception):
    """The package was installed without its built page script."""


def graph_script() -> str:
    """The graph page's script (AssetMissing when it was never built)."""
    try:
        return read_text(GRAPH_SCRIPT, SYSTEM_FILE)
    except FileNotFoundError:
        raise AssetMissing("the graph view's script is not built (run `make client`, or "
                           "`npm run build`, in the project's folder)") from None

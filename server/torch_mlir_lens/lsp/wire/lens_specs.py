"""The code lenses of a module, as plain data: what `features/code_lens.py` answers, and what
the start-up front (`front.py`) answers before pygls and lsprotocol are loaded.

Lsprotocol-free on purpose: one definition of the lenses for both, so the front's first
answer is the same as the full server's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from torch_mlir_lens import discovery
from torch_mlir_lens.rules.targets import target_title

SHOW_IR = "torchMlirLens.showIr"  # client-side command
EXPORT = "torchMlirLens.exportModule"
EXPLAIN_INPUTS = "torchMlirLens.explainInputs"
VERIFY = "torchMlirLens.verify"
SHOW_GRAPH = "torchMlirLens.showGraph"  # client-side command: the graph view beside the source
SHOW_GRAPH_TITLE = "Show Graph"
PROFILE = "torchMlirLens.profile"  # an IREE CPU module timed against eager, per line
VERIFY_TITLE = "Verify"  # before any run; then the verdict (lsp/checks/verify_view.py)

# (title, command, arguments) of one lens
LensSpec = tuple[str, str, list[Any]]


def name_span(lines: Sequence[str], line: int, col: int, end_col: int,
              name: str) -> tuple[int, int, int]:
    """(0-based line, start, end character) of a definition's name; re-found in the line text
    when columns are off (discovery reports AST columns, UTF-8 byte offsets; the text search
    keeps the span right for lines holding non-ASCII characters)."""
    index = line - 1
    text = lines[index] if 0 <= index < len(lines) else ""
    found = -1
    for match in re.finditer(rf"\b{re.escape(name)}\b", text):
        found = match.start()
        if found >= min(col, len(text)) - 1:
            break
    if found < 0:
        found, length = col, max(end_col - col, 0)
    else:
        length = len(name)
    return max(index, 0), found, found + length


def shows_lenses(info: discovery.ModuleInfo) -> bool:
    """A plain helper function without inputs has nothing to lower: no lens."""
    return info.kind == "class" or info.inputs != "missing"


def module_lens_specs(uri: str, info: discovery.ModuleInfo, lens_targets: Sequence[str],
                      default_target: str, verify_title: str = VERIFY_TITLE,
                      verdict: tuple[str, str] | None = None,
                      iree: Sequence[LensSpec] = ()) -> list[LensSpec]:
    """The lenses of one module: "Set example inputs" alone when it has none; else "Show …
    IR" per lens target, "Export…", "Verify" (or its last verdict), the IREE lenses (`iree`:
    Verify and time on IREE CPU, when it is checked), "Show Graph", and the backends' verdict
    (`verdict`: its title and the target its click shows) once checked."""
    name = info.name
    if info.inputs == "missing":
        return [("Set example inputs", EXPLAIN_INPUTS, [{"uri": uri, "module": name}])]
    out: list[LensSpec] = [(f"Show {target_title(t)} IR", SHOW_IR, [uri, name, t])
                           for t in lens_targets]
    out.append(("Export…", EXPORT, [{"uri": uri, "module": name, "target": default_target}]))
    out.append((verify_title, VERIFY, [{"uri": uri, "module": name}]))
    out.extend(iree)
    out.append((SHOW_GRAPH_TITLE, SHOW_GRAPH, [uri, name]))
    if verdict is not None and verdict[0]:
        out.append((verdict[0], SHOW_IR, [uri, name, verdict[1]]))
    return out

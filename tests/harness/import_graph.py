"""The package's import graph, read from the source (ast), for the layer and cycle tests.

    modules()                              → module name → its file
    graph(top_level_only, type_only=False) → module → the package's modules it imports
    cycles(graph)                          → the import loops (more than one module)
    crossings(graph, layers)               → "A imports B" where B's layer is not below A's

`graph` sees imports inside functions (a lazy import hides a loop at import time but still
ties two modules into one); imports under `if TYPE_CHECKING:` count only with `type_only`.
`layers` maps a package or module prefix to its layer; a module belongs to its longest
matching prefix, and modules of one unit may import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import torch_mlir_lens

PACKAGE_DIR = Path(torch_mlir_lens.__file__).parent
ROOT = PACKAGE_DIR.parent


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def graph(top_level_only: bool, type_only: bool = False) -> dict[str, set[str]]:
    """module → the package's modules it imports (`from P import M` names module P.M)."""
    found_modules = modules()
    result: dict[str, set[str]] = {name: set() for name in found_modules}
    for name, path in found_modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        nodes = tree.body if top_level_only else list(ast.walk(tree))
        annotations_only = set() if type_only else {
            id(n) for block in ast.walk(tree) if _is_type_checking_block(block)
            for stmt in block.body for n in ast.walk(stmt)}
        for node in nodes:
            if id(node) in annotations_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    targets.append(sub if sub in found_modules else node.module)
            result[name].update(t for t in targets if t in found_modules and t != name)
    return result


def _is_type_checking_block(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    return isinstance(node, ast.If) and ast.unparse(node.test) in (
        "TYPE_CHECKING", "typing.TYPE_CHECKING")


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found




def unit_of(module: str, layers: dict[str, int]) -> str | None:
    """The longest prefix of `module` (whole dotted parts) that `layers` names, or None."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in layers:
            return prefix
    return None


def crossings(graph: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    """Every import of a unit at the same layer or above, between different units (modules
    no prefix names are not judged)."""
    found = []
    for name, deps in graph.items():
        unit = unit_of(name, layers)
        for dep in deps:
            other = unit_of(dep, layers)
            if unit and other and other != unit and layers[other] >= layers[unit]:
                found.append(f"{name} imports {dep}")
    return sorted(found)

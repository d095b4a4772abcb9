"""The import graph of torch_mlir_lens: layers, no cycles, and the CLI stays torch-free.

The graph is read from the source (ast), so it sees imports inside functions too: a lazy import
hides a cycle at import time but still ties two modules into one. Imports under
`if TYPE_CHECKING:` are left out: they name types for annotations and never run (the LSP
features annotate their `server` parameter with the server type they are given).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from tests.harness import import_graph
from tests.harness.import_graph import PACKAGE_DIR


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_graph.cycles(graph) == [{"a", "b", "c"}]


def test_no_module_level_import_cycle() -> None:
    assert import_graph.cycles(import_graph.graph(top_level_only=True)) == []


def test_no_import_cycle() -> None:
    cycles = [sorted(c) for c in import_graph.cycles(import_graph.graph(top_level_only=False))]
    assert cycles == [], f"import cycles: {cycles}"


def test_the_cli_modules_do_not_import_each_other_in_a_cycle() -> None:
    cli = {name: deps for name, deps in import_graph.graph(top_level_only=False).items()
           if name.startswith("torch_mlir_lens.cli")}
    inner = {name: {d for d in deps if d in cli} for name, deps in cli.items()}
    assert import_graph.cycles(inner) == []


CLI_MODULES = sorted(n for n in import_graph.modules() if n == "torch_mlir_lens.cli"
                     or n.startswith("torch_mlir_lens.cli."))


@pytest.mark.parametrize("module", CLI_MODULES)
def test_each_cli_module_imports_alone_without_torch(module: str) -> None:
    code = (f"import sys, {module}\n"
            "sys.exit(3 if 'torch' in sys.modules else 0)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr or "imported torch"


def test_serve_loads_nothing_of_the_other_commands() -> None:
    """`serve` is what an editor starts and waits for: parsing its arguments loads neither the
    other commands nor the repository check (the first lenses wait for every import)."""
    code = ("import sys\n"
            "from torch_mlir_lens import cli\n"
            "from torch_mlir_lens.cli import serve\n"
            "loaded = sorted(m for m in sys.modules if m.startswith('torch_mlir_lens.'))\n"
            "print(' '.join(loaded))\n")
    assert _printed_by(code) == ["torch_mlir_lens.cli", "torch_mlir_lens.cli.serve"]


def _printed_by(code: str) -> list[str]:
    """The words a fresh interpreter running `code` prints (it must exit 0)."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


# The layers of the package, bottom up (ARCHITECTURE.md explains each): a package imports only
# from the layers below it, never from one beside it or above. A package missing here fails
# `test_every_package_has_a_layer`: a new package must be placed on purpose.
LAYERS: dict[str, int] = {
    "torch_mlir_lens": 0,  # the package itself: its version, defaults.py
    "system": 1,  # reads the defaults (the one reader's limits)
    "source": 2,
    "discovery": 3,
    "protocol": 4,
    "rules": 5,
    "project": 6,
    "findings": 6,  # what a lowering found, editor-neutral: the LSP and check render it
    "views": 6,  # self-contained pages: the graph, the coverage report
    "engine": 7,
    "worker": 7,
    "lsp": 8,
    "repo_check": 8,
    "cli": 9,
}


def _unit(module: str) -> str:
    """The package a module belongs to for layering (a top-level subpackage, else the root;
    `python -m torch_mlir_lens` is the command line)."""
    if module == "torch_mlir_lens.__main__":
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "torch_mlir_lens"


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE_DIR.iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= set(LAYERS), f"place in LAYERS: {sorted(packages - set(LAYERS))}"


def test_each_package_imports_only_the_layers_below_it() -> None:
    crossings = sorted(
        f"{name} imports {dep}"
        for name, deps in import_graph.graph(top_level_only=False).items() for dep in deps
        if _unit(dep) != _unit(name) and LAYERS[_unit(dep)] >= LAYERS[_unit(name)]
    )
    assert crossings == [], "layer crossings:\n" + "\n".join(crossings)


def test_the_layer_check_sees_a_crossing() -> None:
    """The check above must fail on a real crossing: the worker importing the engine."""
    graph = {"torch_mlir_lens.worker.x": {"torch_mlir_lens.engine.y"}}
    crossings = [(n, d) for n, deps in graph.items() for d in deps
                 if _unit(d) != _unit(n) and LAYERS[_unit(d)] >= LAYERS[_unit(n)]]
    assert crossings == [("torch_mlir_lens.worker.x", "torch_mlir_lens.engine.y")]


def test_the_inner_layer_check_sees_a_crossing() -> None:
    """The helper the subpackage layer tests use: the longest prefix names a module's unit;
    a unit may import itself and what is below it, not what is beside or above it."""
    layers = {"p.low": 0, "p.high": 1, "p.high.top": 2}
    graph = {"p.low.a": {"p.high.b"}, "p.high.b": {"p.low.a", "p.high.c"},
             "p.high.c": set(), "p.high.top.d": {"p.high.b"}, "p.other": {"p.high.top.d"}}
    assert import_graph.crossings(graph, layers) == ["p.low.a imports p.high.b"]


def test_the_cli_uses_only_the_entry_point_of_the_repository_check() -> None:
    """The command line parses and prints; the check gate is `repo_check.run(settings)`, and
    the CLI imports the `repo_check` package alone (type-only imports included), none of its
    modules: what happens between settings and report stays behind that one door."""
    package = "torch_mlir_lens.repo_check"
    reaching_in = sorted(
        f"{name} imports {dep}"
        for name, deps in import_graph.graph(top_level_only=False, type_only=True).items()
        if name == "torch_mlir_lens.cli" or name.startswith("torch_mlir_lens.cli.")
        for dep in deps if dep.startswith(package + "."))
    assert reaching_in == [], "the CLI reaches into repo_check:\n" + "\n".join(reaching_in)
    uses = {dep for name, deps in import_graph.graph(top_level_only=False).items()
            if name.startswith("torch_mlir_lens.cli.") for dep in deps}
    assert package in uses  # the rule above is about a real dependency


def test_the_repository_check_exports_what_it_lists_without_loading_it() -> None:
    """Each name `repo_check` exports resolves, and importing the package loads none of its
    modules (the command line pays for the check only when it runs one)."""
    code = ("import sys, torch_mlir_lens.repo_check as rc\n"
            "before = sorted(m for m in sys.modules if m.startswith(rc.__name__ + '.'))\n"
            "missing = [n for n in rc.__all__ if getattr(rc, n, None) is None]\n"
            "print(before, missing, 'torch' in sys.modules)\n")
    assert _printed_by(code) == ["[]", "[]", "False"]


def test_the_repository_check_exports_what_the_cli_needs_and_no_more() -> None:
    """Each name `repo_check` exports is used by the command line (a name only a test or
    another package uses does not belong at the door)."""
    import torch_mlir_lens.repo_check as rc

    cli_text = "\n".join(p.read_text(encoding="utf-8")
                         for p in (PACKAGE_DIR / "cli").glob("*.py"))
    unused = [name for name in rc.__all__ if not re.search(
        rf"repo_check\.{name}\b|repo_check import [^\n]*\b{name}\b|\b{name}\b[^\n]*#\s*type",
        cli_text)]
    # Types the command line only annotates with are allowed by their role, not by a use.
    unused = [n for n in unused if n not in ("CheckResult", "CheckSettings", "MergedReport")]
    assert unused == [], f"exported but unused by the command line: {unused}"
